# SPDX-License-Identifier: Apache-2.0
"""Issue 30, point 10, with real binaries and Open MPI's launcher:

- `cluster up --cluster-dir DIR`'s next commands are one a line, each with `--cluster-dir DIR` and no `|`;
- a bad `cluster up --config` is status 2 and names the user's file, before any agent starts;
- `malleo run --json` prints the exit status and the reports as the last stdout line; the report path is said once
  (no profiler line besides malleo's);
- a user's LD_PRELOAD reaches the ranks after the profiler's (`malleo run` and `malleo-pmpi`);
- `malleo-pmpi --help` is its usage (status 0), an unknown option one line (status 2);
- a malformed MALLEO_FORCE: `malleo run` refuses it in one line before launching (status 2); launched by
  mpirun directly, the bridge stops every process at start with one line and a non-zero status.

usage: papercuts_test.py HEAT2D_OPENMPI MALLEO_PMPI"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from testkit import skip
from harness import MALLEO, check

HEAT2D, MALLEO_PMPI = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
if not shutil.which("mpirun.openmpi"):
    skip("mpirun.openmpi is not installed")
env = {k: v for k, v in os.environ.items() if not k.startswith("MALLEO_") and k != "LD_PRELOAD"}
env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_mpi_yield_when_idle="1",
           OMPI_MCA_pml="ob1")


def run(args, work, extra=None, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, env=dict(env, **(extra or {})), cwd=work,
                          timeout=timeout, stdin=subprocess.DEVNULL)


with tempfile.TemporaryDirectory(prefix="malleo-papercuts-") as work:
    cluster = os.path.join(work, "my cluster")
    r = run([MALLEO, "--cluster-dir", cluster, "cluster", "up", "--nodes", "1"], work)
    try:
        check(r.returncode == 0, f"cluster up: status {r.returncode} ({r.stderr.strip()})")
        after = r.stdout.split("next:\n", 1)[-1].splitlines()
        quoted = f"'{cluster}'"
        check(after == [f"  malleo --cluster-dir {quoted} --node n1 status", f"  malleo --cluster-dir {quoted} top",
                        f"  malleo --cluster-dir {quoted} cluster down"] and "|" not in r.stdout,
              f"cluster up names the next commands one a line with --cluster-dir ({r.stdout!r})")
        # Pasted as printed, a line runs.
        down = run(["bash", "-c", after[2].strip().replace("malleo ", f"{MALLEO} ", 1)], work)
        check(down.returncode == 0, f"the hint's `cluster down`, pasted, works ({down.stderr.strip()})")
    finally:
        run([MALLEO, "--cluster-dir", cluster, "cluster", "down"], work)

    bad = os.path.join(work, "mine.json")
    with open(bad, "w") as f:
        json.dump({"membership": {"failure_timeout": "soon"}}, f)
    r = run([MALLEO, "--cluster-dir", os.path.join(work, "c2"), "cluster", "up", "--nodes", "2", "--config", bad], work)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and bad in r.stderr and "n1/config.json" not in r.stderr
          and not os.path.exists(os.path.join(work, "c2", "n1")),
          f"a bad --config: status 2, the user's file named, no agent started ({r.returncode}: {r.stderr.strip()})")

    show = ["sh", "-c", 'echo "preload=$LD_PRELOAD"']
    r = run([MALLEO, "--agent", "off", "run", "--json", "--mpi", "openmpi", "-n", "1", "--"] + show, work,
            {"LD_PRELOAD": "libm.so.6"})
    preload = [l for l in r.stdout.splitlines() if l.startswith("preload=")]
    check(r.returncode == 0 and len(preload) == 1 and preload[0].endswith(":libm.so.6")
          and "libmalleo_pmpi_openmpi.so" in preload[0].split(":")[0],
          f"malleo run: the rank's LD_PRELOAD is the profiler's, then the user's ({preload}, {r.stderr.strip()})")
    try:
        last = json.loads(r.stdout.strip().splitlines()[-1])
        check(last["status"] == 0 and last["reports"] == [] and last["profile_dir"] == work,
              f"malleo run --json: the status and no report for a program without MPI ({last})")
    except (ValueError, KeyError, IndexError) as e:
        check(False, f"malleo run --json: the last stdout line is the result ({e}: {r.stdout!r})")

    r = run([MALLEO, "--agent", "off", "run", "--json", "-n", "2", "--", HEAT2D, "--iterations", "20"], work)
    result = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
    reports = [x["json"] for x in result.get("reports", [])]
    check(r.returncode == 0 and result.get("status") == 0 and len(reports) == 1 and os.path.exists(reports[0]),
          f"malleo run --json of heat2d: one report, status 0 ({r.stdout[-500:]!r}, {r.stderr.strip()})")
    if reports:
        check(r.stderr.count(reports[0]) == 1 and "malleo-pmpi: profile" not in r.stderr,
              f"the report's path is said once ({r.stderr!r})")

    r = run([MALLEO_PMPI, "--help"], work)
    check(r.returncode == 0 and r.stdout.startswith("usage: malleo-pmpi") and "Illegal" not in r.stderr,
          f"malleo-pmpi --help ({r.returncode}: {r.stdout!r} {r.stderr!r})")
    r = run([MALLEO_PMPI, "--hostfile", "h", "prog"], work)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown option --hostfile" in r.stderr,
          f"malleo-pmpi with an unknown option: one line, status 2 ({r.returncode}: {r.stderr!r})")
    r = run([MALLEO_PMPI, "--mpi", "openmpi", "-n", "1"] + show, work,
            {"LD_PRELOAD": "libm.so.6", "MALLEO_PROFILE": "off"})
    check(r.returncode == 0 and "libmalleo_pmpi_openmpi.so:libm.so.6" in r.stdout,
          f"malleo-pmpi keeps the user's LD_PRELOAD after the profiler's ({r.stdout!r}, {r.stderr.strip()})")

    # A sanitizer's runtime must stay first (ASan aborts otherwise); the test only reads the variable, so the
    # library named need not exist beyond ld.so's warning.
    asan = "/nonexistent/libasan.so.8"
    for name, command in (("malleo run", [MALLEO, "--agent", "off", "run", "--mpi", "openmpi", "-n", "1", "--"]),
                          ("malleo-pmpi", [MALLEO_PMPI, "--mpi", "openmpi", "-n", "1"])):
        r = run(command + show, work, {"LD_PRELOAD": f"libm.so.6 {asan}", "MALLEO_PROFILE": "off"})
        seen = [l.split("=", 1)[1].split(":") for l in r.stdout.splitlines() if l.startswith("preload=")]
        check(len(seen) == 1 and seen[0][0] == asan and seen[0][1].endswith("libmalleo_pmpi_openmpi.so")
              and seen[0][2:] == ["libm.so.6"],
              f"{name}: a sanitizer runtime stays first, then the profiler, then the rest ({seen}, {r.stderr[-300:]})")

    force = {"MALLEO_FORCE": "split@x"}
    r = run([MALLEO, "--agent", "off", "run", "-n", "2", "--", HEAT2D, "--iterations", "20"], work, force)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "MALLEO_FORCE: 'split@x'" in r.stderr
          and "iterations" not in r.stdout,
          f"malleo run refuses a malformed MALLEO_FORCE before launching ({r.returncode}: {r.stderr!r})")
    r = run(["mpirun.openmpi", "--oversubscribe", "-n", "2", "-x", "MALLEO_FORCE", HEAT2D, "--iterations", "20"],
            work, force)
    lines = [l for l in r.stderr.splitlines() if l.startswith("malleo-pcm: MALLEO_FORCE")]
    check(r.returncode != 0 and len(lines) == 1 and "not running without the schedule" in lines[0]
          and "checksum" not in r.stdout,
          f"the bridge stops at start on a malformed MALLEO_FORCE ({r.returncode}: {r.stdout[-300:]!r} {lines})")
print("ok: papercuts")
