#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What shared blocks cost a program that is never reconfigured: heat2d left alone with its grids in shared blocks
(MALLEO_PCM_SHARED_PAGES=on, the default) and in private memory (off), launched alternately so both see the same
machine (docs/performance.md, "Reconfiguration").

Each launch runs heat2d on --ranks processes over a grid of the size asked (1024 rows of doubles) for --iterations
steps with --times. Reported per setting, medians over the rounds: the first iteration (its first pass over both
grids: the first touch of every page), the median of the other iterations (the steady state) and the launch's wall
time. Both settings must print the same checksum. Before every launch --warm-mb MiB are touched and freed, as
bench/pcm_reconfigure.py does.

    meson setup build-bench --buildtype=release -Dwerror=false
    ninja -C build-bench examples/heat2d/heat2d_openmpi bench/first_touch
    bench/pcm_shared_iterations.py --heat2d build-bench/examples/heat2d/heat2d_openmpi"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcm_reconfigure  # noqa: E402

SETTINGS = ('off', 'on')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--heat2d', default='build-bench/examples/heat2d/heat2d_openmpi',
                    help='heat2d of the MPI (default: %(default)s)')
    ap.add_argument('--mpi', choices=sorted(pcm_reconfigure.LAUNCHERS), default='openmpi')
    ap.add_argument('--size-mb', type=int, default=300, help='grid size in MiB (default: %(default)s)')
    ap.add_argument('--ranks', type=int, default=2, help='processes (default: %(default)s)')
    ap.add_argument('--iterations', type=int, default=25, help='steps per launch (default: %(default)s)')
    ap.add_argument('--rounds', type=int, default=5, help='launches per setting; medians (default: %(default)s)')
    ap.add_argument('--warm-mb', type=int, default=2000, help='MiB touched and freed before every launch (0: none)')
    opts = ap.parse_args()
    program = os.path.abspath(opts.heat2d)
    if not os.access(program, os.X_OK):
        ap.error(f'{opts.heat2d} is not an executable program')
    warm = pcm_reconfigure.memory_warmer(program, opts.warm_mb)
    if min(opts.size_mb, opts.ranks, opts.rounds) < 1 or opts.iterations < 3:
        ap.error('--size-mb, --ranks and --rounds must be positive, --iterations at least 3')

    grid = ['--rows', '1024', '--columns', str(opts.size_mb * 128), '--iterations', str(opts.iterations), '--times']
    figures = {}  # (setting, what) -> values
    for _ in range(opts.rounds):
        sums = {}
        for setting in SETTINGS:
            warm()
            wall, proc = pcm_reconfigure.launch(opts.mpi, opts.ranks, [program] + grid,
                                                {'MALLEO_PCM_SHARED_PAGES': setting})
            sums[setting] = pcm_reconfigure.checksum(proc)
            by_iteration = pcm_reconfigure.iteration_times(proc)
            times = [by_iteration[i] for i in sorted(by_iteration)]
            if proc.returncode != 0 or not sums[setting] or len(times) != opts.iterations:
                pcm_reconfigure.fail(f'shared pages {setting}', proc)
            figures.setdefault((setting, 'first'), []).append(times[0])
            figures.setdefault((setting, 'steady'), []).append(statistics.median(times[1:]))
            figures.setdefault((setting, 'wall'), []).append(wall)
        if sums['off'] != sums['on']:
            sys.exit(f'checksum {sums["off"]} (off) != {sums["on"]} (on)')

    print(f'heat2d, {opts.size_mb} MiB on {opts.ranks} processes, {opts.iterations} iterations, '
          f'medians of {opts.rounds} launches per setting (s):')
    print(f'{"shared pages":>12} {"first iteration":>16} {"steady iteration":>17} {"wall":>7}')
    for setting in SETTINGS:
        first, steady, wall = (statistics.median(figures[(setting, what)]) for what in ('first', 'steady', 'wall'))
        print(f'{setting:>12} {first:16.4f} {steady:17.4f} {wall:7.2f}')
    ratio = [on / off for on, off in zip(figures[('on', 'steady')], figures[('off', 'steady')])]
    print(f'steady iteration on / off by round: {", ".join(f"{r:.2f}" for r in ratio)}')


if __name__ == '__main__':
    main()
