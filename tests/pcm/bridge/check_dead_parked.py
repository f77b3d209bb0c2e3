#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A parked process dies: the run goes on without it (Open MPI).

heat2d in pool mode on 4 processes, 2 active, under mpirun --enable-recovery (which, unlike mpirun's default, does
not end the job when a process dies). Once the program has printed its first iteration (every process is past
MPI_Init), the test kills world rank 3, parked, with SIGKILL. Then MALLEO_FORCE asks for a split 2 -> 4, which needs
rank 3: the split must fail with rank 3 named as not answering the agreement, and the run go on with 2 processes; a
split 2 -> 3 and a merge back, which the living processes can do, must happen; the end of the run must report that
rank 3 did not take its message, and the run must end with the static run's checksum and exit code 0.

    check_dead_parked.py build/examples/heat2d/heat2d_openmpi"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading

import pcm_launch

ITERATIONS = 40
TIMEOUT = 1  # MALLEO_AGREE_TIMEOUT, seconds
FORCE = 'split@20:2,split@25:1,merge@32:1'


def world_rank_3(mpirun_pid, program):
    """The pid of the launch's world rank 3, found by its environment among mpirun's children."""
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat', encoding='utf-8') as f:
                parent = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{entry}/environ', 'rb') as f:
                environ = f.read().split(b'\0')
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                command = f.read().split(b'\0')[0].decode()
        except (OSError, ValueError, IndexError):
            continue
        if parent == mpirun_pid and command == program and b'OMPI_COMM_WORLD_RANK=3' in environ:
            return int(entry)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('program', help='heat2d built against Open MPI')
    opts = ap.parse_args()
    program = os.path.abspath(opts.program)
    args = [program, '--iterations', str(ITERATIONS), '--pace', '50', '--progress', '1']
    want = pcm_launch.static_checksum('openmpi', args[:3])

    env = {'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': FORCE, 'MALLEO_AGREE_TIMEOUT': TIMEOUT, 'MALLEO_PCM_VERBOSE': 1}
    cmd = pcm_launch.command('openmpi', 4, env, args)
    cmd.insert(1, '--enable-recovery')
    with tempfile.TemporaryFile(mode='w+') as errors:
        proc = subprocess.Popen(cmd, env=pcm_launch.environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=errors, text=True)
        lines, started = [], threading.Event()

        def read():
            for line in proc.stdout:
                lines.append(line)
                if line.startswith('iteration 0 of'):
                    started.set()
            started.set()  # the run ended before its first iteration

        reader = threading.Thread(target=read)
        reader.start()
        # The split at iteration 20 comes a second after the first iteration (--pace 50 ms): time enough to kill.
        started.wait()
        before_kill = ''.join(lines)
        killed = world_rank_3(proc.pid, program)
        if killed:
            os.kill(killed, signal.SIGKILL)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            print('FAIL: the run did not end within 60 s', file=sys.stderr)
        reader.join()
        errors.seek(0)
        done = subprocess.CompletedProcess(cmd, proc.returncode, ''.join(lines), errors.read())
    err = done.stderr

    problems = []
    if not killed:
        problems.append('world rank 3 was not found among mpirun\'s children')
    if 'iteration 20 of' in before_kill:
        problems.append('the kill came after the split')
    if proc.returncode != 0:
        problems.append(f'exit code {proc.returncode}')
    if pcm_launch.checksum(done) != want:
        problems.append(f'checksum {pcm_launch.checksum(done)}, the static run {want}')
    for expected in (f'malleo-pcm: split at iteration 20 failed: world rank 3 did not answer the agreement within '
                     f'{TIMEOUT} s; continuing with 2 processes',
                     'malleo-pcm: split at iteration 25: 2 -> 3 processes',
                     'malleo-pcm: merge at iteration 32: 3 -> 2 processes',
                     'malleo-pcm: world rank 3, parked, did not take the end of the run'):
        if expected not in err:
            problems.append(f'no line "{expected}"')
    if problems:
        print('FAIL: ' + '; '.join(problems) + '\n' + pcm_launch.describe(done), file=sys.stderr)
        return 1
    print(f'OK: rank 3 killed while parked; the split that needed it failed, the run went on and ended with {want}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
