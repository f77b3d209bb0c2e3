# SPDX-License-Identifier: Apache-2.0
"""Launch a malleable program under one MPI with the bridge's environment variables, and read heat2d's output."""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'python'))
# What the PCM checks take from the shared module, as pcm_launch.NAME.
from testkit import (LAUNCHERS, SKIP, TIME_SCALE, apps_at, describe, launcher_command,  # noqa: E402,F401
                     launcher_env, sole_checksum, start_plain_agent, verdict)


def command(mpi, ranks, env_for_ranks, program):
    return launcher_command(mpi, ranks, env_for_ranks, [os.path.abspath(program[0])] + list(program[1:]))


def environment():
    """The launcher's environment: only the MALLEO_ variables a test sets reach the ranks."""
    return launcher_env(drop=('MALLEO_',))


def run(mpi, ranks, program, env_for_ranks=None, timeout=60):
    """timeout: seconds before the run counts as hung, times TIME_SCALE."""
    cmd = command(mpi, ranks, env_for_ranks or {}, program)
    return subprocess.run(cmd, env=environment(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout * TIME_SCALE)


def checksum(proc):
    return sole_checksum(proc.stdout)


def static_checksum(mpi, program):
    """heat2d's checksum on one process, left alone; the test stops when that run fails."""
    static = run(mpi, 1, program)
    want = checksum(static)
    if static.returncode != 0 or not want:
        sys.exit('FAIL: static run\n' + describe(static))
    return want


def final_processes(proc):
    found = re.findall(r'^final: (\d+) processes', proc.stdout, re.M)
    return int(found[0]) if len(found) == 1 else None


def completed_operations(proc):
    """(operation, iteration, before, after) for every 'malleo-pcm: ... -> ...' line (MALLEO_PCM_VERBOSE=1), in
    iteration order: different processes print them, and the launcher forwards each one's stderr on its own."""
    return sorted(((op, int(it), int(a), int(b)) for op, it, a, b in
                   re.findall(r'^malleo-pcm: (split|merge|migrate) at iteration (\d+): (\d+) -> (\d+) processes',
                              proc.stderr, re.M)), key=lambda done: done[1])


def descendants(root):
    """root and every process below it, from /proc."""
    children = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat', encoding='utf-8') as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def cpu_ticks(pid):
    """CPU time of a process so far, in clock ticks."""
    with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def processes_of(root, program):
    """The processes under root (itself included) that run `program`, a resolved path."""
    found = []
    for pid in descendants(root):
        try:
            if os.path.realpath(f'/proc/{pid}/exe') == program:
                found.append(pid)
        except OSError:
            pass
    return found


def cpu_percent(pids, window):
    """Each process's share of one core over the next `window` seconds, as (percent, pid), lowest first."""
    before = {pid: cpu_ticks(pid) for pid in pids}
    start = time.monotonic()
    time.sleep(window)  # the measurement window itself, not a synchronisation
    after = {pid: cpu_ticks(pid) for pid in pids}
    elapsed = time.monotonic() - start
    hz = os.sysconf('SC_CLK_TCK')
    return sorted((100.0 * (after[p] - before[p]) / hz / elapsed, p) for p in pids)
