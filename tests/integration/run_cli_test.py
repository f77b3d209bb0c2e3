# SPDX-License-Identifier: Apache-2.0
"""`malleo run` takes what people type for mpirun (issue 30, points 3, 4 and 11), checked with real launchers:

- `-np N` is `-n N`; a count that is not one is refused in one readable line;
- options malleo does not know go to the launcher in their order, with their values (the rank reads its
  launcher's command line from /proc and sees their effect); without `--` before the program they are refused;
- the MPI is the program's (`ldd`) when `--mpi` is not given, a mismatch with `--mpi` is refused, and a program
  linked with no MPI runs only when `--mpi` says which;
- every MALLEO_* variable of malleo's environment is given to the ranks by the launcher (`-x` / `-genv`), not a
  fixed list, so that it reaches ranks on other hosts too.

usage: run_cli_test.py HEAT2D_OPENMPI HEAT2D_MPICH"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from testkit import skip
from harness import MALLEO, check

# A rank that prints a variable and the command line of its launcher: Open MPI's mpirun is the rank's parent,
# MPICH's mpiexec the parent of the rank's hydra_pmi_proxy.
SHOW_OPENMPI = 'echo "value=$RUN_TEST_VALUE"; tr "\\0" "\\n" < /proc/$PPID/cmdline'
SHOW_MPICH = 'echo "value=$RUN_TEST_VALUE"; tr "\\0" "\\n" < /proc/$(cut -d" " -f4 /proc/$PPID/stat)/cmdline'


def expect(ok, message, detail):
    """check() with the detail said only when it fails."""
    check(ok, message if ok else f"{message} ({detail})")


def malleo_run(args, work, env, timeout=120):
    return subprocess.run([MALLEO, "--agent", "off", "run", *args], capture_output=True, text=True, env=env,
                          cwd=work, timeout=timeout, stdin=subprocess.DEVNULL)


def one_line(r):
    lines = r.stderr.strip().splitlines()
    return r.returncode == 2 and r.stdout == "" and len(lines) == 1 and len(lines[0]) < 300


def launcher_words(stdout):
    """The launcher's argv as the rank printed it, after its value= line."""
    lines = stdout.splitlines()
    return lines[lines.index(next(l for l in lines if l.startswith("value="))) + 1:]


def contains(words, part):
    return any(words[i:i + len(part)] == part for i in range(len(words) - len(part) + 1))


def counts(heat2d, work, env):
    r = malleo_run(["-np", "2", "--", heat2d, "--iterations", "3"], work, env)
    expect(r.returncode == 0 and "final: 2 processes" in r.stdout, "-np 2 runs 2 ranks as -n 2 does",
           f"{r.returncode}: {r.stdout.strip()} {r.stderr.strip()[-500:]}")
    r = malleo_run(["--np=3", "--", heat2d, "--iterations", "3"], work, env)
    expect(r.returncode == 0 and "final: 3 processes" in r.stdout, "--np=3 (Open MPI's spelling) runs 3 ranks",
           f"{r.returncode}: {r.stdout.strip()} {r.stderr.strip()[-500:]}")
    for args, needle in [(["-n", "0"], "-n must be at least 1 (got 0)"),
                         (["-np", "0"], "-n must be at least 1 (got 0)"),
                         (["-n", "p"], "-n 'p' is not a number of ranks"),
                         (["-n", "1", "--max", "0"], "--max must be at least 1 (got 0)"),
                         (["-n", "1", "--max", "x"], "--max 'x' is not a number of ranks"),
                         (["-n", "99999999999999999999"], "at most")]:
        r = malleo_run([*args, "--", heat2d], work, env)
        check(one_line(r) and needle in r.stderr, f"{' '.join(args)}: exit 2, one line: {r.stderr.strip()}")


def launcher_options(work, env):
    hostfile = os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("localhost slots=4\n")
    given = ["--hostfile", hostfile, "--map-by", "slot", "-x", "RUN_TEST_VALUE=7", "--report-bindings"]
    r = malleo_run(["-n", "1", "--mpi", "openmpi", *given, "--", "/bin/sh", "-c", SHOW_OPENMPI], work, env)
    expect(r.returncode == 0 and "value=7" in r.stdout, "Open MPI: -x RUN_TEST_VALUE=7 given before -- reaches the rank",
           f"{r.returncode}: {r.stdout[:200]} {r.stderr.strip()[-500:]}")
    words = launcher_words(r.stdout)
    expect(contains(words, given) and words.index("--hostfile") < words.index("-n"),
           "mpirun got the options in their order, with their values, before the ranks' block", words)
    check("MCW rank 0 bound" in r.stderr, "--report-bindings took effect (mpirun reported the binding)")

    r = malleo_run(["-n", "1", "--mpi", "mpich", "-genv", "RUN_TEST_VALUE", "8", "--", "/bin/sh", "-c", SHOW_MPICH],
                   work, env)
    expect(r.returncode == 0 and "value=8" in r.stdout and
           contains(launcher_words(r.stdout), ["-genv", "RUN_TEST_VALUE", "8"]),
           "MPICH: -genv RUN_TEST_VALUE 8 reaches mpiexec and the rank",
           f"{r.returncode}: {r.stdout[:300]} {r.stderr.strip()[-500:]}")

    r = malleo_run(["-n", "1", "--mpi", "openmpi", "--oversubscribe", "/bin/true"], work, env)
    check(one_line(r) and "--oversubscribe" in r.stderr and "`--`" in r.stderr,
          f"a launcher option without -- before the program: exit 2, one line: {r.stderr.strip()}")


def detection(heat2d_openmpi, heat2d_mpich, work, env):
    before = set(os.listdir(work))
    r = malleo_run(["-n", "2", "--profile-dir", work, "--", heat2d_mpich, "--iterations", "3"], work, env)
    expect(r.returncode == 0 and "final: 2 processes" in r.stdout, "heat2d_mpich without --mpi runs under MPICH",
           f"{r.returncode}: {r.stderr.strip()[-500:]}")
    written = [f for f in set(os.listdir(work)) - before if f.endswith(".json")]
    check(len(written) == 1, f"it wrote one report ({written})")
    with open(os.path.join(work, written[0])) as f:
        library = json.load(f)["mpi_library"]
    check(library.startswith("MPICH"), f"its report says MPICH ({library})")

    for mpi, program, linked in [("openmpi", heat2d_mpich, "MPICH"), ("mpich", heat2d_openmpi, "Open MPI")]:
        r = malleo_run(["-n", "1", "--mpi", mpi, "--", program], work, env)
        check(one_line(r) and linked in r.stderr and f"--mpi {mpi}" in r.stderr,
              f"--mpi {mpi}, a program linked with {linked}: exit 2, one line: {r.stderr.strip()}")
    r = malleo_run(["-n", "1", "--", "/bin/true"], work, env)
    check(one_line(r) and "no MPI" in r.stderr and "--mpi" in r.stderr,
          f"a program linked with no MPI, no --mpi: exit 2, one line: {r.stderr.strip()}")
    r = malleo_run(["-n", "1", "--mpi", "openmpi", "--", "/bin/true"], work, env)
    expect(r.returncode == 0, "... and with --mpi it runs", f"{r.returncode}: {r.stderr.strip()[-300:]}")
    no_slurm = {k: v for k, v in env.items() if not k.startswith("SLURM")}
    for args, extra, needle in [(["--launcher", "foo"], {}, "--launcher foo: expected mpirun or srun"),
                                (["--launcher", "srun"], {}, "not inside a Slurm allocation"),
                                (["--launcher", "srun", "--mode", "spawn"], {"SLURM_JOB_NODELIST": "n1"},
                                 "--max and use pool mode")]:
        r = malleo_run(["-n", "1", *args, "--", heat2d_openmpi], work, dict(no_slurm, **extra))
        check(one_line(r) and needle in r.stderr, f"{' '.join(args)}: exit 2, one line: {r.stderr.strip()}")
    r = malleo_run(["-n", "1", "--", "no-such-program-here"], work, env)
    check(one_line(r) and "no-such-program-here" in r.stderr,
          f"a program that is nowhere: exit 2, one line: {r.stderr.strip()}")


def forwarding(work, env):
    # Commas and '=' in the value, as MALLEO_FORCE's weights and MALLEO_NODES have them.
    value = "a,b=c;d"
    env = dict(env, MALLEO_RUN_TEST_MARK=value)
    for mpi, show, want in [("openmpi", SHOW_OPENMPI, ["-x", f"MALLEO_RUN_TEST_MARK={value}"]),
                            ("mpich", SHOW_MPICH, ["-genv", "MALLEO_RUN_TEST_MARK", value])]:
        r = malleo_run(["-n", "1", "--mpi", mpi, "--", "/bin/sh", "-c", show], work, env)
        words = launcher_words(r.stdout) if r.returncode == 0 else []
        expect(contains(words, want), f"{mpi}: a MALLEO_ variable of no fixed list reaches the launcher as {want}",
               f"{r.returncode}: {words} {r.stderr.strip()[-300:]}")


def main():
    heat2d_openmpi, heat2d_mpich = map(os.path.abspath, sys.argv[1:3])
    for program in (heat2d_openmpi, heat2d_mpich):
        if not os.path.exists(program):
            skip(f"{program} not built")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for key in [k for k in env if k.startswith("MALLEO_")]:
        env.pop(key)
    work = tempfile.mkdtemp(prefix="malleo-run-cli-")
    counts(heat2d_openmpi, work, env)
    launcher_options(work, env)
    detection(heat2d_openmpi, heat2d_mpich, work, env)
    forwarding(work, env)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
