#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Parked processes use no CPU: heat2d on 5 processes, 3 active, merged to 1 at iteration 1, so 2 spare processes
(parked since MPI_PCM_Init) and 2 that left (parked in PCM_Merge) wait while 1 computes. Over a window of the run,
read from /proc/<pid>/stat, each of the 4 parked processes must use under 1 % of a core."""

import argparse
import os
import subprocess
import sys

import pcm_launch

WINDOW = 2.0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('program')
    opts = ap.parse_args()
    program = os.path.realpath(opts.program)
    env = {'MALLEO_POOL_ACTIVE': 3, 'MALLEO_FORCE': 'merge@1:2'}
    cmd = pcm_launch.command(opts.mpi, 5, env, [program, '--rows', '200', '--columns', '200',
                                                 '--iterations', '1000000', '--progress', '200'])
    proc = subprocess.Popen(cmd, env=pcm_launch.environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        # Progress past iteration 200 means the merge is done and the leavers are parked.
        for line in proc.stdout:
            if line.startswith('iteration 400 '):
                break
        else:
            sys.exit('FAIL: heat2d ended before the measurement\n' + proc.stderr.read())
        ranks = pcm_launch.processes_of(proc.pid, program)
        if len(ranks) != 5:
            sys.exit(f'FAIL: found {len(ranks)} heat2d processes, expected 5')
        usage = pcm_launch.cpu_percent(ranks, WINDOW)
    finally:
        # The run is endless by design (1e6 iterations); the measurement is over, so stop the launcher we started.
        proc.terminate()
        proc.wait(timeout=30)
    print('CPU % per rank: ' + ', '.join(f'{pid}: {pct:.2f}' for pct, pid in usage))
    parked = usage[:4]
    busy = usage[4]
    if any(pct >= 1.0 for pct, _ in parked):
        sys.exit(f'FAIL: parked processes used {[round(p, 2) for p, _ in parked]} % of a core (limit 1 %)')
    if busy[0] < 10.0:
        sys.exit(f'FAIL: the active process used only {busy[0]:.1f} %: the measurement saw no computation')
    print('ok: 4 parked processes under 1 % of a core while the active one computes')


if __name__ == '__main__':
    main()
