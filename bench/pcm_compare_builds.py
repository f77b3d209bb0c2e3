#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two builds of heat2d (and of the libmalleo_pcm next to each) side by side: split and merge in pool or spawn mode,
timed by the bridge (MALLEO_PCM_PHASES), interleaved round-robin so both see the same machine. For judging a change to the
bridge: keep a copy of the old program and library in the same relative places (its runpath is
$ORIGIN/../../pcm_bridge), e.g.

    mkdir -p /tmp/old/examples/heat2d /tmp/old/pcm_bridge
    cp build-bench/examples/heat2d/heat2d_openmpi /tmp/old/examples/heat2d/
    cp build-bench/pcm_bridge/libmalleo_pcm_openmpi.so /tmp/old/pcm_bridge/
    mkdir -p /tmp/old/bench && cp build-bench/bench/first_touch /tmp/old/bench/    # for --warm-mb
    # ... change, ninja -C build-bench ...
    bench/pcm_compare_builds.py /tmp/old/examples/heat2d/heat2d_openmpi build-bench/examples/heat2d/heat2d_openmpi

Runs through bench/pcm_reconfigure.py (same grid, 2 <-> 4 processes, operation at iteration 2; in the spawn modes one
run splits by spawning and merges back at least 4 probes later: spawn-wait spawns inside the probe, spawn in the
background, and needs a library that records spawn_background)."""

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcm_reconfigure  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('before', help='heat2d of the first build')
    ap.add_argument('after', help='heat2d of the second build')
    ap.add_argument('--mpi', choices=sorted(pcm_reconfigure.LAUNCHERS), default='openmpi')
    ap.add_argument('--sizes-mb', default='100,300', help='grid sizes in MiB, comma-separated')
    ap.add_argument('--rounds', type=int, default=5, help='rounds; medians are reported')
    ap.add_argument('--mode', choices=['pool', 'spawn', 'spawn-wait'], default='pool')
    ap.add_argument('--before-env', action='append', default=[], metavar='KEY=VALUE',
                    help='environment for the first build\'s runs (repeatable): the same program twice with '
                         'different settings, e.g. --after-env MALLEO_PCM_HUGE_PAGES=on')
    ap.add_argument('--after-env', action='append', default=[], metavar='KEY=VALUE',
                    help='environment for the second build\'s runs (repeatable)')
    ap.add_argument('--warm-mb', type=int, default=2000,
                    help='MiB touched and freed before every launch, as bench/pcm_reconfigure.py (0: none); needs '
                         'bench/first_touch in each build')
    opts = ap.parse_args()
    for path in (opts.before, opts.after):
        if not os.access(path, os.X_OK):
            ap.error(f'{path} is not an executable program')
    sizes = [int(s) for s in opts.sizes_mb.split(',')]
    builds = {'before': opts.before, 'after': opts.after}
    envs = {}
    for name, pairs in (('before', opts.before_env), ('after', opts.after_env)):
        if any('=' not in pair for pair in pairs):
            ap.error(f'--{name}-env takes KEY=VALUE')
        envs[name] = dict(pair.split('=', 1) for pair in pairs)
    times = {}
    with tempfile.TemporaryDirectory(prefix='malleo-compare-') as folder:
        for r in range(opts.rounds):
            for mb in sizes:
                for name, path in builds.items():
                    settings = pcm_reconfigure.arguments().parse_args(
                        ['--mpi', opts.mpi, '--heat2d', path, '--warm-mb', str(opts.warm_mb)])
                    settings.env = envs[name]
                    bench = pcm_reconfigure.Bench(settings, folder)
                    for op, record in bench.operations(mb, opts.mode).items():
                        times.setdefault((mb, op, name), []).append(record)
            print(f'round {r + 1} of {opts.rounds} done, load average {os.getloadavg()[0]:.2f}', file=sys.stderr)
    print(f'{opts.mode} mode, {opts.mpi}, 2 <-> 4 processes, medians of {opts.rounds} interleaved rounds (ranges), '
          'seconds')
    phase = {'spawn': 'spawn_background', 'spawn-wait': 'spawn'}.get(opts.mode, 'redistribution')
    print(f'| MiB | operation | before | before: {phase} | after | after: {phase} | before / after |')
    print('| --- | --- | --- | --- | --- | --- | --- |')
    for mb in sizes:
        for op in ('split', 'merge'):
            cells = []
            for name in builds:
                records = times[(mb, op, name)]
                totals = [x['total'] for x in records]
                cells.append(f'{statistics.median(totals):.4f} ({min(totals):.4f}-{max(totals):.4f})')
                cells.append(f'{statistics.median(x[phase] for x in records):.4f}')
            ratios = [b['total'] / a['total'] for b, a in zip(times[(mb, op, 'before')], times[(mb, op, 'after')])]
            print(f'| {mb} | {op} | ' + ' | '.join(cells) + f' | {statistics.median(ratios):.1f}x |')
    # With heat2d --times in both builds: the operation and what the iterations after it paid.
    whole = {key: [pcm_reconfigure.whole(r) for r in records]
             for key, records in times.items() if all(r.get('paid_after') is not None for r in records)}
    if len(whole) == len(times):
        print()
        print('The operation with what the iterations after it paid:')
        print('| MiB | operation | before | after | before / after |')
        print('| --- | --- | --- | --- | --- |')
        for mb in sizes:
            for op in ('split', 'merge'):
                cells = [f'{statistics.median(w):.4f} ({min(w):.4f}-{max(w):.4f})'
                         for w in (whole[(mb, op, name)] for name in builds)]
                ratios = [b / a for b, a in zip(whole[(mb, op, 'before')], whole[(mb, op, 'after')])]
                print(f'| {mb} | {op} | ' + ' | '.join(cells) + f' | {statistics.median(ratios):.1f}x |')


if __name__ == '__main__':
    main()
