# SPDX-License-Identifier: Apache-2.0
"""malleo's help for people (issue 30, point 10, and the bash completion): `malleo help [COMMAND]` is --help;
a mistyped command gets one line naming the nearest command (status 2), never CLI11's "A subcommand is required";
CLI11's other wording never leaks either (issue 44, point 4): a number out of range says the range and the value
given ("--timeout: must be above 0 (got -1)", not "Value -1 not in range 0.000000 to 1797693..."), a missing argument
is named as the usage line names it ("missing FILE|DIR", not "files is required"), and an unknown option gets the
nearest option of its command (`cluster up --nods`: --nodes), before the command too (`malleo --tiemout 3 status`);
the bash completion in cli/malleo.bash-completion, sourced in a non-interactive bash and called with COMP_WORDS as
readline would set them, completes subcommands (`malleo sta<TAB>` -> status), cluster's subcommands, options with
the global ones (`malleo force --<TAB>` has --wait and --node), and leaves an option's value and `run --`'s
program to bash's file names."""
import json
import os
import subprocess
import tempfile

from testkit import Problems, verdict

MALLEO = os.environ["MALLEO"]
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cli", "malleo.bash-completion")
errors = Problems()
check = errors.check


def malleo(*args):
    return subprocess.run([MALLEO, *args], capture_output=True, text=True, timeout=20)


r = malleo("help")
check(r.returncode == 0 and "Subcommands:" in r.stdout, f"malleo help: status {r.returncode}: {r.stderr}")
r = malleo("help", "cluster", "up")
check(r.returncode == 0 and "--nodes" in r.stdout, f"malleo help cluster up: {r.returncode}: {r.stderr}")
for words, line in ((["stauts"], "unknown command 'stauts'; did you mean 'status'?"),
                    (["--node", "n1", "stat"], "did you mean 'status'?"),
                    (["cluster", "dwon"], "unknown command 'cluster dwon'; did you mean 'cluster down'?"),
                    (["xyzzy"], "unknown command 'xyzzy'; the commands are status, "),
                    (["cluster"], "malleo cluster needs a command: up, add, down, status"),
                    (["--node", "n1"], "malleo needs a command: status, peers,")):
    r = malleo(*words)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and line in r.stderr and "required" not in r.stderr,
          f"malleo {' '.join(words)}: status {r.returncode}, stderr {r.stderr!r}, expected one line with {line!r}")

# Every check of a number, the command's own words, a missing argument and an unknown option: one line, status 2.
for words, line in ((["--timeout", "-1", "status"], "--timeout: must be above 0 (got -1)"),
                    (["status", "--timeout=abc"], "--timeout: must be a number above 0 (got abc)"),
                    (["events", "--count", "0"], "--count: must be above 0 (got 0)"),
                    (["events", "--count", "2.5"], "--count: must be a whole number above 0 (got 2.5)"),
                    (["events", "--for", "-3"], "--for: must be above 0 (got -3)"),
                    (["top", "--duration", "0"], "--duration: must be above 0 (got 0)"),
                    (["top", "--interval", "0"], "--interval: must be from 0.1 to 3600 (got 0)"),
                    (["force", "a", "split", "1", "--wait", "0"], "--wait: must be above 0 (got 0)"),
                    (["drain", "n2", "--wait", "-1"], "--wait: must be above 0 (got -1)"),
                    (["drain", "n2", "--deadline", "abc"], "--deadline: must be a number above 0 (got abc)"),
                    (["cluster", "up", "--nodes", "0"], "--nodes: must be from 1 to 1024 (got 0)"),
                    (["cluster", "up", "--hosts", "300"], "--hosts: must be from 1 to 253 (got 300)"),
                    (["cluster", "up", "--host-cpu-quota", "0"], "--host-cpu-quota: must be from 0.01 to 1024 (got 0)"),
                    (["report"], "missing FILE|DIR, reports (.json)"),
                    (["timeline"], "missing EVENTS.jsonl, agents' event logs"),
                    (["plot", "x.jsonl"], "missing --output FILE, the image to write"),
                    (["keygen"], "missing NODE, the nodes' ids"),
                    (["force", "a", "split"], "missing COUNT, processes to add, remove or move (usage: malleo force APP "
                                              "OPERATION COUNT;"),
                    (["run", "-n", "2"], "missing -- PROGRAM [ARGS], the MPI program to run"),
                    (["run", "--", "./app"], "missing -n N, number of ranks"),
                    (["status", "--tiemout", "3"], "unknown option '--tiemout' of malleo status; did you mean '--timeout'?"),
                    (["cluster", "up", "--nods", "3"], "unknown option '--nods' of malleo cluster up; did you mean '--nodes'?"),
                    (["--tiemout", "3", "status"], "unknown option '--tiemout'; did you mean '--timeout'?"),
                    (["status", "extra"], "unexpected argument 'extra' for malleo status")):
    r = malleo(*words)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and line in r.stderr and
          not any(leak in r.stderr for leak in ("not in range", "is required", "not expected", "179769")),
          f"malleo {' '.join(words)}: status {r.returncode}, stderr {r.stderr!r}, expected one line with {line!r}")

def complete(line):
    """COMPREPLY of _malleo for LINE, the cursor at its end (a trailing space: a new, empty word)."""
    words = line.split(" ")
    program = f"""
source {SCRIPT}
COMP_WORDS=({' '.join(repr(w) for w in words)})
COMP_CWORD={len(words) - 1}
_malleo
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    env = dict(os.environ, PATH=os.path.dirname(MALLEO) + ":" + os.environ.get("PATH", ""))
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                       timeout=20, env=env)
    check(r.returncode == 0, f"completion of {line!r}: bash status {r.returncode}: {r.stderr}")
    return [w for w in r.stdout.split("\n") if w]


check(complete("malleo sta") == ["status"], f"malleo sta<TAB>: {complete('malleo sta')}")
every = complete("malleo ")
for command in ("status", "peers", "apps", "force", "drain", "events", "top", "cluster", "run", "report", "load",
                "timeline", "plot", "sim", "help"):
    check(command in every, f"malleo <TAB> lacks {command}: {every}")
check("__complete" not in every, f"malleo <TAB> offers the hidden __complete: {every}")
check(complete("malleo cluster ") == ["add", "down", "status", "up"], f"malleo cluster <TAB>: {complete('malleo cluster ')}")
forced = complete("malleo force --")
check({"--wait", "--weights", "--json", "--node", "--timeout"} <= set(forced), f"malleo force --<TAB>: {forced}")
check(complete("malleo --node n1 force --w") == ["--wait", "--weights"],
      f"malleo --node n1 force --w<TAB>: {complete('malleo --node n1 force --w')}")
check(complete("malleo report --json --c") == ["--cluster-dir"], f"malleo report --json --c<TAB>: {complete('malleo report --json --c')}")
# `--node <TAB>` and `drain <TAB>`: the virtual cluster's node names, from the cluster file of --cluster-dir or
# MALLEO_CLUSTER_DIR; without a cluster, nothing (bash then offers file names).
with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as up:
    os.environ["MALLEO_CLUSTER_DIR"] = empty
    check(complete("malleo --node ") == [], f"--node <TAB> with no cluster up: {complete('malleo --node ')}")
    check(complete("malleo --agent ") == [], f"another option's value: {complete('malleo --agent ')}")
    with open(os.path.join(up, "cluster.json"), "w") as f:
        json.dump({"nodes": [{"name": n, "pid": 1} for n in ("n1", "n2", "gpu7")]}, f)
    check(complete(f"malleo --cluster-dir {up} --node ") == ["gpu7", "n1", "n2"],
          f"--node <TAB> names the nodes of --cluster-dir: {complete(f'malleo --cluster-dir {up} --node ')}")
    check(complete(f"malleo --cluster-dir={up} --node n") == ["n1", "n2"],
          f"--node n<TAB>: {complete(f'malleo --cluster-dir={up} --node n')}")
    os.environ["MALLEO_CLUSTER_DIR"] = up
    check(complete("malleo drain ") == ["gpu7", "n1", "n2"], f"drain <TAB>: {complete('malleo drain ')}")
    check(complete("malleo --node g") == ["gpu7"], f"--node g<TAB> from MALLEO_CLUSTER_DIR: {complete('malleo --node g')}")
    del os.environ["MALLEO_CLUSTER_DIR"]
check(complete("malleo run -n 2 -- ") == [], f"run's program: {complete('malleo run -n 2 -- ')}")

# docs/cli.md cannot fall behind the binary: its synopsis lists every subcommand, and it names every option of each.
with open(os.path.join(os.path.dirname(SCRIPT), "..", "docs", "cli.md")) as f:
    doc = f.read()
synopsis = doc.split("```\n", 2)[1]
for command in every:
    check(f"  {command} " in synopsis, f"docs/cli.md's synopsis lacks {command}")
for command in ("status", "peers", "apps", "force", "drain", "events", "top", "cluster up", "cluster down",
                "cluster status", "run", "report", "load", "timeline", "plot"):
    for option in complete(f"malleo {command} --"):
        check(f"`{option}" in doc or f"{option} " in doc, f"docs/cli.md does not document {command} {option}")

verdict(errors, f"{len(errors)} problems with malleo help, typos or the bash completion",
        "malleo help, typos and the bash completion")
