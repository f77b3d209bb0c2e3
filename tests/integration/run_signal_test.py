# SPDX-License-Identifier: Apache-2.0
"""SIGTERM and SIGINT sent to `malleo run` alone (as `kill` does, not the terminal's whole process group) reach
the launcher, which ends its ranks; `malleo run` waits for it and exits with 128 + the signal; no process of the
job is left running, as /proc shows (issue 30, point 9). A real, paced heat2d under the real launcher.

usage: run_signal_test.py --mpi openmpi|mpich HEAT2D"""
import os
import signal
import subprocess
import sys
import tempfile
import shutil

from testkit import heat2d_args
from harness import MALLEO, check, wait_for


def stat(pid):
    """(state, parent, start time) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def command_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def descendants(root):
    """Every live process below `root`: pid -> start time (a pid reused later is another process)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = stat(int(entry))
            if s and s[0] != "Z":
                children.setdefault(s[1], []).append((int(entry), s[2]))
    found, todo = {}, [root]
    while todo:
        for pid, start in children.get(todo.pop(), []):
            found[pid] = start
            todo.append(pid)
    return found


def running(processes):
    """Those still running: not gone, not a zombie waiting for its new parent to reap it, not a reused pid."""
    alive = []
    for pid, start in processes.items():
        s = stat(pid)
        if s and s[0] != "Z" and s[2] == start:
            alive.append(f"{pid} {command_name(pid)}")
    return alive


def interrupted_run(a, work, sig):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLEO_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # 2000 iterations of at least 20 ms: 40 s, far longer than the test waits. Its own session, so that nothing
    # but the test's signal reaches malleo, as with `kill` from another terminal.
    run = subprocess.Popen([MALLEO, "--agent", "off", "run", "-n", "2", "--profile-dir", work, "--", a.heat2d,
                            "--iterations", "2000", "--pace", "20"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    rank_name = os.path.basename(a.heat2d)[:15]
    job = {}
    try:
        def ranks_started():
            job = descendants(run.pid)
            return job if sum(command_name(pid) == rank_name for pid in job) == 2 else None
        job = wait_for(ranks_started, 60, 0.1)
        check(job is not None, f"the launcher and both ranks run under malleo ({descendants(run.pid)})")
        names = sorted(command_name(pid) for pid in job)
        run.send_signal(sig)
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            check(False, f"malleo run ends within 60 s of {sig.name}")
        stderr = run.stderr.read()
        check(run.returncode == 128 + sig,
              f"{sig.name}: malleo run waited for the launcher and exits with {128 + sig} ({run.returncode}: "
              f"{stderr.strip()[-500:]})")
        left = wait_for(lambda: not running(job), 30, 0.1)
        check(left, f"{sig.name}: none of the job's processes ({', '.join(names)}) still runs "
              f"({running(job)})")
    finally:
        # A failed check leaves nothing behind: malleo, and what it left running of the job.
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        for pid, start in (job or {}).items():
            s = stat(pid)
            if s and s[0] != "Z" and s[2] == start:
                os.kill(pid, signal.SIGKILL)


def main():
    a = heat2d_args()
    work = tempfile.mkdtemp(prefix="malleo-run-signal-")
    for sig in (signal.SIGTERM, signal.SIGINT):
        interrupted_run(a, work, sig)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
