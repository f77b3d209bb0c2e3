# SPDX-License-Identifier: Apache-2.0
"""`malleo report` on what people pass it (issue 30, point 6): the README's glob with two matching files prints one
report each under a `==> FILE <==` line (--json: an array of {"file", "report"}); a directory stands for its newest
report; a directory without one, a missing file and a non-report are one line each on stderr and status 2, the
readable reports still printed; never CLI11's "not expected" nor an abort. Hand-written reports, no MPI needed."""
import glob
import json
import os
import subprocess
import tempfile

from testkit import Problems, verdict

MALLEO = os.environ["MALLEO"]
errors = Problems()
check = errors.check


def report(app, job):
    return {"schema": "malleo.pmpi.profile/1", "app": app, "job": job, "world_size": 1, "mode": "full",
            "ended": "MPI_Finalize", "complete": True, "mpi_library": "test",
            "totals": {"wall_time_s": 1.0, "mpi_time_s": 0.5},
            "ranks": [{"rank": 0, "host": "h", "iterations": {"time_s": [0.1, 0.2], "mpi_time_s": [0.0, 0.1]}}],
            "functions": {"MPI_Send": {"calls": 3, "time_s": 0.5, "bytes": 10}}}


def malleo(*args, cwd=None):
    return subprocess.run([MALLEO, "report", *args], capture_output=True, text=True, timeout=20, cwd=cwd)


with tempfile.TemporaryDirectory(prefix="malleo-report-") as d:
    first = os.path.join(d, "malleo-profile-my_mpi_app-20260101-000000-1.json")
    second = os.path.join(d, "malleo-profile-my_mpi_app-20260101-000100-2.json")
    for path, job, when in ((first, "job-one", 1_000_000), (second, "job-two", 2_000_000)):
        with open(path, "w") as f:
            json.dump(report("my_mpi_app", job), f)
        os.utime(path, (when, when))

    # The README's own command, its glob expanded as a shell does.
    files = sorted(glob.glob(os.path.join(d, "malleo-profile-my_mpi_app-*.json")))
    r = malleo(*files)
    check(r.returncode == 0, f"two files: status {r.returncode}: {r.stderr}")
    check(r.stdout.count("my_mpi_app  job ") == 2 and "job-one" in r.stdout and "job-two" in r.stdout,
          f"two files: not one report each:\n{r.stdout}")
    check(f"==> {first} <==" in r.stdout and f"==> {second} <==" in r.stdout, f"two files: no headers:\n{r.stdout}")
    j = malleo("--json", *files)
    try:
        parsed = json.loads(j.stdout)
        check([e["file"] for e in parsed] == files and parsed[1]["report"]["job"] == "job-two",
              f"--json of two: {j.stdout[:300]}")
    except (ValueError, KeyError, TypeError) as e:
        check(False, f"--json of two files is not the array: {e}: {j.stdout[:300]}")

    # A directory: its newest report (by modification time, not by name).
    os.utime(first, (3_000_000, 3_000_000))
    r = malleo(d)
    check(r.returncode == 0 and "job-one" in r.stdout and "job-two" not in r.stdout and f"==> {first} <==" in r.stdout,
          f"directory: status {r.returncode}, expected the newest (job-one):\n{r.stdout}{r.stderr}")
    r = malleo(".", cwd=d)
    check(r.returncode == 0 and "job-one" in r.stdout, f"'.': status {r.returncode}: {r.stderr}")

    # What is no report: one line each, status 2, the good ones printed all the same.
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write("{not json")
    missing = os.path.join(d, "missing.json")
    for args, needle in (([empty], "no report in this directory"), ([missing], "no such file"),
                         ([bad], "not a JSON report")):
        r = malleo(*args)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and needle in lines[0] and "ios_failure" not in r.stderr,
              f"{args}: status {r.returncode}, expected 2 and one line with {needle!r}: {r.stderr!r}")
    r = malleo("--json", missing)
    check(r.returncode == 2 and r.stdout == "", f"--json of a missing file prints nothing: {r.stdout!r}")
    r = malleo(empty, second)
    check(r.returncode == 2 and "job-two" in r.stdout and r.stderr.count("\n") == 1,
          f"a bad and a good argument: status {r.returncode}, stdout {r.stdout[:200]!r}, stderr {r.stderr!r}")

verdict(errors, f"{len(errors)} problems with malleo report",
        "malleo report of several files, of a directory, and of what is no report")
