#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The stop-restart baseline (seeds 000 and 003): heat2d stopped at iteration k with --checkpoint on one number of
processes and relaunched with --restart on another must print the static run's checksum — growing and shrinking,
at the first and the last iteration, and once relaunched into a pool that then splits. A checkpoint of another grid
and a file that is no checkpoint must each be refused with one line and a non-zero exit."""

import argparse
import os
import tempfile

import pcm_launch

# (processes before, checkpoint at iteration, processes after, pool environment of the restarted run)
CASES = [
    (2, 13, 5, {}),
    (4, 7, 1, {}),
    (1, 1, 3, {}),
    (3, 29, 2, {}),
    # launched on 4, 2 active; the split activates the other 2
    (2, 10, 4, {'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': 'split@3:2', 'MALLEO_PCM_VERBOSE': 1}),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--rows', type=int, default=24)
    ap.add_argument('--columns', type=int, default=30)
    ap.add_argument('--iterations', type=int, default=30)
    ap.add_argument('program')
    opts = ap.parse_args()
    grid = ['--rows', str(opts.rows), '--columns', str(opts.columns), '--iterations', str(opts.iterations)]

    want = pcm_launch.static_checksum(opts.mpi, [opts.program] + grid)

    failures = []
    with tempfile.TemporaryDirectory() as folder:
        for before, at, after, env in CASES:
            path = os.path.join(folder, f'heat2d-{before}-{at}.ckpt')
            stop = pcm_launch.run(opts.mpi, before,
                                  [opts.program] + grid + ['--checkpoint', path, '--checkpoint-at', str(at)])
            problems = []
            if stop.returncode != 0 or f'checkpoint: iteration {at},' not in stop.stdout:
                problems.append('the checkpoint run did not stop with its checkpoint\n' + pcm_launch.describe(stop))
            if pcm_launch.checksum(stop):
                problems.append('the checkpoint run went on to the end')
            if os.path.getsize(path) != 32 + 8 * opts.rows * opts.columns:
                problems.append(f'checkpoint of {os.path.getsize(path)} bytes')
            go = pcm_launch.run(opts.mpi, after, [opts.program] + grid + ['--restart', path], env)
            if go.returncode != 0 or pcm_launch.checksum(go) != want:
                problems.append(f'restart: checksum {pcm_launch.checksum(go)} != static {want}\n' +
                                pcm_launch.describe(go))
            if pcm_launch.final_processes(go) != after:
                problems.append(f'restart ended on {pcm_launch.final_processes(go)} processes, not {after}')
            if env and [op for op, *_ in pcm_launch.completed_operations(go)] != ['split']:
                problems.append('the restarted pool did not split\n' + pcm_launch.describe(go))
            print(f"{'ok' if not problems else 'FAIL'}: {before} processes, checkpoint at {at}, "
                  f"restart on {after}{' (pool, split@3:2)' if env else ''}")
            failures += problems

        path = os.path.join(folder, 'heat2d-2-13.ckpt')
        other = pcm_launch.run(opts.mpi, 2, [opts.program, '--rows', str(opts.rows), '--columns',
                                             str(opts.columns + 1), '--restart', path])
        if other.returncode == 0 or 'not a' not in other.stderr:
            failures.append('a checkpoint of another grid was accepted\n' + pcm_launch.describe(other))
        junk = os.path.join(folder, 'junk')
        with open(junk, 'w') as f:
            f.write('not a checkpoint\n')
        bad = pcm_launch.run(opts.mpi, 1, [opts.program] + grid + ['--restart', junk])
        if bad.returncode == 0 or 'is not a heat2d checkpoint' not in bad.stderr:
            failures.append('a file that is no checkpoint was accepted\n' + pcm_launch.describe(bad))
        print(f"{'ok' if len(failures) == 0 else 'FAIL'}: bad checkpoints refused")
    pcm_launch.verdict(failures, f'{len(failures)} problems',
                       f'every stop-restart under {opts.mpi} gave the static checksum {want}')


if __name__ == '__main__':
    main()
