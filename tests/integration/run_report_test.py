# SPDX-License-Identifier: Apache-2.0
"""`malleo run` announces the report its own job wrote, and no other (issue 30, point 5), with real mpirun and the
real profiler:

- back-to-back runs in one directory each announce exactly the file their job wrote, whose world size is theirs;
- a report of the same program already there, even one dated now, is never announced: with MALLEO_PROFILE=off
  nothing is;
- MALLEO_PROFILE_DIR of the user's environment is where the report goes when --profile-dir is not given, and a
  missing directory (of either) is made; one that cannot be is refused in one line.

usage: run_report_test.py HEAT2D_OPENMPI"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from testkit import skip
from harness import MALLEO, check


def run(heat2d, ranks, cwd, env, *options):
    return subprocess.run([MALLEO, "--agent", "off", "run", "-n", str(ranks), *options, "--", heat2d,
                           "--iterations", "3"], capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
                          stdin=subprocess.DEVNULL)


def announced(r):
    return re.findall(r"^malleo: report (\S+\.json) ", r.stderr, re.M)


def reports(directory):
    return {os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".json")}


def world_size(path):
    with open(path) as f:
        return json.load(f)["world_size"]


def main():
    heat2d = os.path.abspath(sys.argv[1])
    if not os.path.exists(heat2d):
        skip(f"{heat2d} not built")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLEO_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = tempfile.mkdtemp(prefix="malleo-run-report-")
    out = os.path.join(work, "out")
    os.mkdir(out)

    # Another report of this program, dated as if a run beside this one had just written it.
    stale = os.path.join(out, f"malleo-profile-{os.path.basename(heat2d)}-1.json")
    with open(stale, "w") as f:
        f.write("{}")
    os.utime(stale, (time.time() + 60, time.time() + 60))

    for ranks in (1, 2):
        before = reports(out)
        r = run(heat2d, ranks, work, env, "--profile-dir", out)
        check(r.returncode == 0, f"run of {ranks} rank(s) ends well ({r.returncode})")
        new = reports(out) - before
        named = announced(r)
        check(len(new) == 1 and named == list(new),
              f"run of {ranks} rank(s): announces exactly the one report its job wrote ({named}, new {new})")
        check(world_size(named[0]) == ranks, f"... which is its job's: world size {ranks}")

    before = reports(out)
    r = run(heat2d, 2, work, dict(env, MALLEO_PROFILE="off"), "--profile-dir", out)
    check(r.returncode == 0 and reports(out) == before, "with MALLEO_PROFILE=off the run writes no report")
    check(not announced(r) and "report" not in r.stderr,
          f"... and announces none, nor says that none was written ({r.stderr.strip()})")

    # The user's MALLEO_PROFILE_DIR, missing and nested: made, and the report is there, not in the current directory.
    chosen = os.path.join(work, "env", "a", "b")
    r = run(heat2d, 1, work, dict(env, MALLEO_PROFILE_DIR=chosen))
    named = announced(r)
    check(r.returncode == 0 and len(named) == 1 and os.path.dirname(named[0]) == chosen and os.path.exists(named[0]),
          f"MALLEO_PROFILE_DIR (missing) is made and holds the report ({named}"
          f"{'' if named else r.stderr.strip()[-300:]})")
    check(not [f for f in os.listdir(work) if f.startswith("malleo-profile-")], "none went to the current directory")

    missing = os.path.join(work, "new", "dir")
    r = run(heat2d, 1, work, dict(env, MALLEO_PROFILE_DIR=chosen), "--profile-dir", missing)
    named = announced(r)
    check(r.returncode == 0 and len(named) == 1 and os.path.dirname(named[0]) == missing,
          f"--profile-dir (missing) is made, and wins over MALLEO_PROFILE_DIR ({named})")

    r = run(heat2d, 1, work, env, "--profile-dir", stale)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and "--profile-dir" in lines[0],
          f"--profile-dir naming a file: exit 2, one line ({r.returncode}: {r.stderr.strip()})")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
