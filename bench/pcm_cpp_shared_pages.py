#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The C++ API's real splits and merges with its buffers in private memory (MALLEO_PCM_SHARED_PAGES=off) and in
shared blocks whose pages the new blocks take over (on, the default), interleaved round-robin so both see the same
machine (docs/performance.md, "Reconfiguration").

Each launch runs tests/pcm/bridge/heat1d_cpp (the C++ API's 1D heat rod: a block1d buffer of doubles with ghost
elements) on 4 processes in pool mode, 2 active: MALLEO_FORCE=split@2:2,merge@5:2, a split 2 -> 4 and a merge back
4 -> 2 three probes later, on a rod of the size asked. The bridge's own records (MALLEO_PCM_PHASES) give each
operation's time at the coordinator and its redistribution phase, and how much was taken over as pages; the wall
time of the whole launch includes the program's first touch of its rod (slower in shared memory). Both settings
must print the same checksum. Before every launch --warm-mb MiB are touched and freed (bench/first_touch of the
same build), as bench/pcm_reconfigure.py does.

    meson setup build-bench --buildtype=release -Dwerror=false
    ninja -C build-bench tests/pcm/bridge/pcm_heat1d_cpp_openmpi bench/first_touch
    bench/pcm_cpp_shared_pages.py --program build-bench/tests/pcm/bridge/pcm_heat1d_cpp_openmpi"""

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcm_reconfigure  # noqa: E402

FORCE = 'split@2:2,merge@5:2'
SETTINGS = ('off', 'on')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--program', default='build-bench/tests/pcm/bridge/pcm_heat1d_cpp_openmpi',
                    help='heat1d_cpp of the MPI (default: %(default)s)')
    ap.add_argument('--mpi', choices=sorted(pcm_reconfigure.LAUNCHERS), default='openmpi')
    ap.add_argument('--sizes-mb', default='10,100,300', help='rod sizes in MiB, comma-separated')
    ap.add_argument('--rounds', type=int, default=3, help='rounds; medians are reported')
    ap.add_argument('--warm-mb', type=int, default=2000, help='MiB touched and freed before every launch (0: none)')
    opts = ap.parse_args()
    program = os.path.abspath(opts.program)
    if not os.access(program, os.X_OK):
        ap.error(f'{opts.program} is not an executable program')
    warm = pcm_reconfigure.memory_warmer(program, opts.warm_mb)
    try:
        sizes = [int(s) for s in opts.sizes_mb.split(',')]
    except ValueError:
        ap.error(f'--sizes-mb takes whole MiB separated by commas, not {opts.sizes_mb!r}')

    figures = {}  # (MiB, setting, what) -> values
    with tempfile.TemporaryDirectory(prefix='malleo-shared-') as folder:
        for r in range(opts.rounds):
            for mb in sizes:
                sums = {}
                for setting in SETTINGS:
                    warm()
                    phases = os.path.join(folder, f'{mb}-{setting}-{r}.jsonl')
                    env = {'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': FORCE, 'MALLEO_PCM_PHASES': phases,
                           'MALLEO_PCM_SHARED_PAGES': setting}
                    wall, proc = pcm_reconfigure.launch(opts.mpi, 4, [program, '--rows', '1024', '--columns',
                                                                      str(mb * 128), '--iterations', '8'], env)
                    sums[setting] = pcm_reconfigure.checksum(proc)
                    if proc.returncode != 0 or not sums[setting]:
                        pcm_reconfigure.fail(f'{mb} MiB, shared pages {setting}', proc)
                    with open(phases, encoding='utf-8') as f:
                        records = [json.loads(line) for line in f]
                    if [record['operation'] for record in records] != ['split', 'merge']:
                        sys.exit(f'{mb} MiB, shared pages {setting}: operations {records}')
                    figures.setdefault((mb, setting, 'wall'), []).append(wall)
                    for record in records:
                        for what in ('total', 'redistribution', 'taken_as_pages'):
                            figures.setdefault((mb, setting, record['operation'] + ' ' + what), []).append(
                                record[what])
                if sums['off'] != sums['on']:
                    sys.exit(f'{mb} MiB: checksum {sums["off"]} (off) != {sums["on"]} (on)')
            print(f'round {r + 1} of {opts.rounds} done', file=sys.stderr)

    def med(mb, setting, what):
        return statistics.median(figures[(mb, setting, what)])

    print(f'heat1d_cpp, 4 processes ({opts.mpi}, pool), {FORCE}, medians of {opts.rounds} rounds\n')
    print('| MiB | operation | off: ms (redistribution) | on: ms (redistribution) | taken as pages (on) | off / on |')
    print('| --- | --- | --- | --- | --- | --- |')
    for mb in sizes:
        for op in ('split', 'merge'):
            off, on = med(mb, 'off', op + ' total'), med(mb, 'on', op + ' total')
            print(f'| {mb} | {op} | {1e3 * off:.1f} ({1e3 * med(mb, "off", op + " redistribution"):.1f}) | '
                  f'{1e3 * on:.1f} ({1e3 * med(mb, "on", op + " redistribution"):.1f}) | '
                  f'{med(mb, "on", op + " taken_as_pages") / 1048576:.1f} MiB | {off / on:.1f}× |')
        print(f'| {mb} | whole launch, s | {med(mb, "off", "wall"):.2f} | {med(mb, "on", "wall"):.2f} | | '
              f'{med(mb, "off", "wall") / med(mb, "on", "wall"):.2f}× |')


if __name__ == '__main__':
    main()
