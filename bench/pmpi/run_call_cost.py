#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cost libmalleo_pmpi adds per MPI call, measured in one run that alternates without the preload, with it and
MALLEO_PROFILE=full, and with it and MALLEO_PROFILE=off (round-robin, so drifting machine load hits all three
alike). Each configuration's figure is the median over the repetitions of call_cost's own per-run medians.

    run_call_cost.py --mpi openmpi --lib build/pmpi_profiler/libmalleo_pmpi_openmpi.so \\
                     build/bench/pmpi/pmpi_call_cost_openmpi [--repetitions 9]
"""

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'python'))
import testkit  # noqa: E402

CONFIGS = [('baseline', None), ('full', 'full'), ('off', 'off')]


def launch(opts, mode, out, ranks, calls, trips):
    preload = opts.lib if mode else None
    proc = testkit.run_profiled(opts.mpi, ranks, [opts.program, str(calls), str(trips), str(opts.batches)],
                           preload=preload, profile_dir=out, mode=mode or 'full', timeout=60,
                           yield_when_idle=opts.yield_when_idle)
    m = re.search(r'test_ns=([\d.]+) timed_ns=([\d.]+) pingpong_ns=([\d.]+)', proc.stdout)
    if proc.returncode != 0 or not m:
        sys.exit(f'call_cost failed ({mode}): {proc.stdout}\n{proc.stderr}')
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def one_run(opts, mode, out):
    # MPI_Test on one rank, so a second busy rank does not compete for the two cores; the ping-pong needs two.
    test_ns, timed_ns, _ = launch(opts, mode, out, 1, opts.calls, 0)
    if not opts.trips:
        return test_ns, timed_ns, float('nan')
    try:
        _, _, pingpong_ns = launch(opts, mode, out, 2, 1000, opts.trips)
    except subprocess.TimeoutExpired:
        # Two busy-polling ranks on two loaded cores can starve each other for a whole time slice per message.
        pingpong_ns = float('nan')
    return test_ns, timed_ns, pingpong_ns


def median(values):
    kept = [v for v in values if not math.isnan(v)]
    return statistics.median(kept) if kept else float('nan')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--mpi', required=True, choices=sorted(testkit.LAUNCHERS))
    ap.add_argument('--lib', required=True)
    ap.add_argument('--repetitions', type=int, default=9)
    ap.add_argument('--calls', type=int, default=1000000, help='MPI_Test calls per batch')
    ap.add_argument('--trips', type=int, default=2000, help='ping-pong round trips per batch (0: no ping-pong)')
    ap.add_argument('--batches', type=int, default=5)
    ap.add_argument('--no-yield', dest='yield_when_idle', action='store_false',
                    help="keep Open MPI's busy polling (on a loaded 2-core machine a ping-pong batch can then take "
                         "seconds instead of milliseconds)")
    ap.add_argument('program')
    opts = ap.parse_args()
    opts.lib = os.path.abspath(opts.lib)

    results = {name: ([], [], []) for name, _ in CONFIGS}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix='malleo-pmpi-bench-') as out:
        for _ in range(opts.repetitions):
            for name, mode in CONFIGS:
                for series, value in zip(results[name], one_run(opts, mode, out)):
                    series.append(value)

    med = {name: [median(s) for s in series] for name, series in results.items()}
    base = med['baseline']
    print(f'# {opts.mpi}, {opts.repetitions} alternating repetitions, medians, '
          f'mpi_yield_when_idle={int(opts.yield_when_idle)}; load average '
          f'{load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs')
    print('| configuration | MPI_Test(null) ns/call | added | MPI_Send(PROC_NULL) ns/call | added '
          '| 8-byte ping-pong ns/message | added |')
    print('|---|---|---|---|---|---|---|')
    for name, _ in CONFIGS:
        t, r, p = med[name]
        print(f'| {name} | {t:.1f} | {t - base[0]:+.1f} | {r:.1f} | {r - base[1]:+.1f} | {p:.0f} | {p - base[2]:+.0f} |')
    for i, what in enumerate(['MPI_Test', 'MPI_Send(PROC_NULL)', 'ping-pong']):
        kept = {n: [v for v in s[i] if not math.isnan(v)] for n, s in results.items()}
        print(f'{what} min..max over repetitions (runs): ' +
              ', '.join(f'{n} {min(v):.1f}..{max(v):.1f} ({len(v)})' for n, v in kept.items() if v))


if __name__ == '__main__':
    main()
