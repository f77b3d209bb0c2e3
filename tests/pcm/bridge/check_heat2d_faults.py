#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Failed reconfigurations leave heat2d running in its old configuration with its data intact: a participant that
never answers the agreement (timeout), one that refuses, a transfer that fails after the data has moved (split and
merge), and a command the pool cannot satisfy. Each run must print the static checksum, report the failure on one
stderr line, and still carry out the operations that follow it. With --api cpp, the C++ API's heat1d_cpp instead,
under a merge back after a split whose transfers fail: the survivors grow their blocks in place into the room the
split left, over their trailing ghost elements, which must be as they were after the failure (heat1d_cpp checks its
ghosts at every probe that changed nothing and exits with 3 if not). With --api cpp-shared, heat1d_cpp on a rod of
12 MiB with MALLEO_PCM_SHARED_PAGES=on, under that case and a split whose transfers fail; with --api c-shared, heat2d's
cases on a grid of 12 MiB in shared blocks (PCM_Alloc): the new blocks had taken the old blocks' pages over before a
transfer failed, and the old blocks must still hold them after it."""

import argparse
import re

import pcm_launch

CASES = [
    # (name, MALLEO_FORCE, MALLEO_FAULT, expected failure line, operations that must happen, final size)
    ('agreement timeout', 'split@5:2,split@12:1', 'agree-timeout@5',
     r'split at iteration 5 failed: world rank 3 did not answer the agreement within 0\.5 s; continuing with 2',
     ['split'], 3),
    ('refusal', 'merge@4:1,split@9:2', 'refuse@4',
     r'merge at iteration 4 failed: world rank 1 answered isUnmalleable; continuing with 2', ['split'], 4),
    ('split transfer failure', 'split@6:3,merge@14:1', 'redistribute@6',
     r'split at iteration 6 failed: injected redistribution fault \(on world rank 4\); continuing with 2',
     ['merge'], 1),
    ('merge transfer failure', 'merge@6:1,split@9:1', 'redistribute@6',
     r'merge at iteration 6 failed: injected redistribution fault \(on world rank 1\); continuing with 2',
     ['split'], 3),
    ('pool exhausted', 'split@3:9,migrate@8:1', '',
     r'split at iteration 3 failed: split of 9: only 4 spare processes; continuing with 2', ['migrate'], 2),
]

CPP_CASES = [
    ('merge back into room, transfer failure', 'split@3:2,merge@6:2,merge@10:1', 'redistribute@6',
     r'merge at iteration 6 failed: injected redistribution fault \(on world rank 3\); continuing with 4',
     ['split', 'merge'], 3),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--api', choices=['c', 'c-shared', 'cpp', 'cpp-shared'], default='c',
                    help='heat2d (c, c-shared) or heat1d_cpp (cpp, cpp-shared) and its cases')
    ap.add_argument('program')
    opts = ap.parse_args()
    shared = opts.api.endswith('-shared')
    cases = {'c': CASES, 'c-shared': CASES, 'cpp': CPP_CASES, 'cpp-shared': CPP_CASES + [CASES[2]]}[opts.api]
    grid = ['--rows', '20', '--columns', '24', '--iterations', '20']
    if shared:
        grid = ['--rows', '1024', '--columns', '1536', '--iterations', '20']
    want = pcm_launch.static_checksum(opts.mpi, [opts.program] + grid)

    failures = []
    for name, force, fault, line, after, final in cases:
        env = {'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': force, 'MALLEO_PCM_VERBOSE': 1,
               'MALLEO_AGREE_TIMEOUT': '0.5'}
        if fault:
            env['MALLEO_FAULT'] = fault
        env['MALLEO_PCM_SHARED_PAGES'] = 'on' if shared else 'off'
        proc = pcm_launch.run(opts.mpi, 6, [opts.program] + grid, env)
        problems = []
        if proc.returncode != 0:
            problems.append(f'exit code {proc.returncode}')
        if pcm_launch.checksum(proc) != want:
            problems.append(f'checksum {pcm_launch.checksum(proc)} != static {want}')
        reports = re.findall(r'^malleo-pcm: .* failed: .*$', proc.stderr, re.M)
        if len(reports) != 1 or not re.search(line, reports[0]):
            problems.append(f'failure reports {reports}, expected one matching {line!r}')
        done = [op for op, *_ in pcm_launch.completed_operations(proc)]
        if done != after:
            problems.append(f'operations done {done} != {after}')
        if pcm_launch.final_processes(proc) != final:
            problems.append(f'final size {pcm_launch.final_processes(proc)} != {final}')
        print(f'{"ok" if not problems else "FAIL"}: {name}')
        if problems:
            failures.append(f'{name}: ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))
    pcm_launch.verdict(failures, f'{len(failures)} of {len(cases)} fault cases',
                       f'{len(cases)} failed reconfigurations left the run intact (checksum {want})')


if __name__ == '__main__':
    main()
