#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Split and merge against stop-restart on heat2d's grid, as in seeds 000 and 003 (docs/performance.md,
"Reconfiguration").

For each grid size, in one run, interleaved round-robin and repeated (medians reported):
- split: heat2d launched over-allocated (pool mode: FROM of TO processes active), MALLEO_FORCE=split@K; merge: TO
  active, MALLEO_FORCE=merge@K back to FROM. The bridge's own timer (MALLEO_PCM_PHASES) gives the reconfiguration
  time at the coordinator, broken down into agreement, activation (pool) or spawn, redistribution and rebuild.
- stop-restart: heat2d on FROM processes stopped at iteration K with --checkpoint (gathered through rank 0 into a
  file), relaunched on TO with --restart (rank 0 reads, scatters); and TO -> FROM for the merge's counterpart. Its
  cost is wall(stop run) + wall(restart run) - wall(a static run of the same K iterations on the first size): what
  is left is the checkpoint (gather + write), a second launch of mpirun and MPI, and the read and scatter. The
  program's own lines give the write and read times; the remainder is the relaunch.

The ratio is stop-restart / split (or merge): how many times faster the in-memory reconfiguration is.
--mode spawn runs the split and merge in spawn mode (only FROM processes launched, MALLEO_PCM_MODE=spawn); if the
bridge cannot do it, the spawn rows say so and the pool rows stand."""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LAUNCHERS = {'openmpi': 'mpirun.openmpi', 'mpich': 'mpiexec.mpich'}
COLUMN_BYTES = 8 * 1024  # a column of --rows 1024 doubles


def launch(mpi, ranks, program, env_for_ranks):
    """(wall seconds, completed process) of one mpirun."""
    launcher = shutil.which(LAUNCHERS[mpi])
    if not launcher:
        sys.exit(f'{LAUNCHERS[mpi]} is not installed')
    if mpi == 'openmpi':
        cmd = [launcher, '--oversubscribe', '--bind-to', 'none', '-n', str(ranks)]
        for key, value in env_for_ranks.items():
            cmd += ['-x', f'{key}={value}']
    else:
        cmd = [launcher, '-n', str(ranks)]
        for key, value in env_for_ranks.items():
            cmd += ['-genv', key, str(value)]
    env = {k: v for k, v in os.environ.items() if not k.startswith('MALLEO_')}
    env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_rmaps_base_oversubscribe='1', OMPI_MCA_mpi_yield_when_idle='1')
    start = time.monotonic()
    proc = subprocess.run(cmd + program, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600)
    return time.monotonic() - start, proc


def checksum(proc):
    found = re.findall(r'^checksum ([0-9a-f]{16})$', proc.stdout, re.M)
    return found[0] if len(found) == 1 else None


def fail(what, proc):
    sys.exit(f'{what} failed (rc {proc.returncode})\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n'
             f'{proc.stderr[-2000:]}')


class Bench:
    def __init__(self, opts, folder):
        self.opts = opts
        self.folder = folder
        self.heat2d = os.path.abspath(opts.heat2d)

    def grid(self, megabytes, iterations):
        columns = megabytes * (1 << 20) // COLUMN_BYTES
        return [self.heat2d, '--rows', '1024', '--columns', str(columns), '--iterations', str(iterations)]

    def malleable(self, megabytes, op, mode):
        """The bridge's phases of one split or merge: a dict, or None when the operation did not happen."""
        o = self.opts
        phases = os.path.join(self.folder, 'phases.json')
        if os.path.exists(phases):
            os.remove(phases)
        count = o.to - o.frm
        env = {'MALLEO_PCM_PHASES': phases, 'MALLEO_FORCE': f'{op}@{o.at}:{count}'}
        if mode == 'pool':
            ranks = o.to
            env['MALLEO_POOL_ACTIVE'] = o.frm if op == 'split' else o.to
        else:
            ranks = o.frm if op == 'split' else o.to
            env['MALLEO_PCM_MODE'] = 'spawn'
        _, proc = launch(o.mpi, ranks, self.grid(megabytes, o.at + 1), env)
        if proc.returncode != 0 or not checksum(proc) or not os.path.exists(phases):
            if mode == 'spawn':
                return None
            if proc.returncode == 0 and checksum(proc):
                sys.exit(f'{op} at {megabytes} MiB: no MALLEO_PCM_PHASES record (a libmalleo_pcm without phase '
                         'timing? rebuild it)')
            fail(f'{op} at {megabytes} MiB', proc)
        with open(phases) as f:
            records = [json.loads(line) for line in f if line.strip()]
        return records[0] if len(records) == 1 and records[0]['operation'] == op else None

    def stop_restart(self, megabytes, before, after):
        """Seconds of one stop-restart from `before` to `after` processes and its parts."""
        o = self.opts
        path = os.path.join(self.folder, 'heat2d.ckpt')
        static_wall, static = launch(o.mpi, before, self.grid(megabytes, o.at), {})
        stop_wall, stop = launch(o.mpi, before,
                                 self.grid(megabytes, o.at + 1) + ['--checkpoint', path, '--checkpoint-at', str(o.at)],
                                 {})
        if stop.returncode != 0:
            fail(f'checkpoint at {megabytes} MiB', stop)
        go_wall, go = launch(o.mpi, after, self.grid(megabytes, o.at) + ['--restart', path], {})
        os.remove(path)
        if go.returncode != 0 or checksum(go) != checksum(static):
            fail(f'restart at {megabytes} MiB (checksum {checksum(go)} against {checksum(static)})', go)
        write = float(re.search(r'^checkpoint: .* in ([0-9.]+) s$', stop.stdout, re.M).group(1))
        read = float(re.search(r'^restart: .* in ([0-9.]+) s$', go.stdout, re.M).group(1))
        total = stop_wall + go_wall - static_wall
        return {'total': total, 'write': write, 'read': read, 'relaunch': total - write - read}


def median(values):
    return statistics.median(values) if values else float('nan')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--mpi', choices=sorted(LAUNCHERS), default='openmpi')
    ap.add_argument('--mode', choices=['pool', 'spawn'], default='pool',
                    help='how the split gets its processes (spawn: reported only if it works)')
    ap.add_argument('--heat2d', help='the heat2d program of that MPI (default build/examples/heat2d/heat2d_MPI)')
    ap.add_argument('--sizes-mb', default='10,100,300', help='grid sizes in MiB, comma-separated')
    ap.add_argument('--repeats', type=int, default=5, help='rounds; medians are reported')
    ap.add_argument('--from', dest='frm', type=int, default=2, help='processes before a split / after a merge')
    ap.add_argument('--to', type=int, default=4, help='processes after a split / before a merge')
    ap.add_argument('--at', type=int, default=2, help='the iteration of the reconfiguration or checkpoint')
    ap.add_argument('--json', help='also write every measurement to this file')
    opts = ap.parse_args()
    opts.heat2d = opts.heat2d or f'build/examples/heat2d/heat2d_{opts.mpi}'
    if not os.access(opts.heat2d, os.X_OK):
        sys.exit(f'{opts.heat2d} is not an executable heat2d (build it, or name it with --heat2d)')
    if not 1 <= opts.frm < opts.to or opts.repeats < 1 or opts.at < 1:
        sys.exit('need 1 <= --from < --to, --repeats >= 1 and --at >= 1')
    try:
        sizes = [int(s) for s in opts.sizes_mb.split(',')]
    except ValueError:
        sys.exit(f'--sizes-mb {opts.sizes_mb}: expected integers separated by commas')

    results = {size: {'split': [], 'merge': [], 'restart+': [], 'restart-': []} for size in sizes}
    spawn_broken = False
    with tempfile.TemporaryDirectory(dir=os.environ.get('TMPDIR', '/tmp')) as folder:
        bench = Bench(opts, folder)
        for round_ in range(opts.repeats):
            for size in sizes:
                for op in ('split', 'merge'):
                    mode = opts.mode if not spawn_broken else 'pool'
                    record = bench.malleable(size, op, mode)
                    if record is None and mode == 'spawn':
                        spawn_broken = True
                        print(f'spawn mode: {op} did not complete; measuring pool mode instead', file=sys.stderr)
                        record = bench.malleable(size, op, 'pool')
                    if record is None:
                        sys.exit(f'{op} at {size} MiB: no phase record')
                    record['mode'] = mode if not spawn_broken else 'pool'
                    results[size][op].append(record)
                results[size]['restart+'].append(bench.stop_restart(size, opts.frm, opts.to))
                results[size]['restart-'].append(bench.stop_restart(size, opts.to, opts.frm))
            print(f'round {round_ + 1} of {opts.repeats} done', file=sys.stderr)

    mode = 'pool' if spawn_broken or opts.mode == 'pool' else 'spawn'
    print(f'heat2d, {opts.mpi}, {mode} mode, {opts.frm} <-> {opts.to} processes, '
          f'medians of {opts.repeats} interleaved rounds (seconds)')
    print('| MiB | operation | reconfiguration | agreement | activation | redistribution | rebuild | '
          'stop-restart | write | read + scatter | relaunch | stop-restart / operation |')
    print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for size in sizes:
        for op, restart in (('split', 'restart+'), ('merge', 'restart-')):
            ops, stops = results[size][op], results[size][restart]
            ratios = [s['total'] / o['total'] for o, s in zip(ops, stops)]
            row = [str(size), f'{op} {opts.frm if op == "split" else opts.to} -> {opts.to if op == "split" else opts.frm}']
            row += [f"{median([o[k] for o in ops]):.4f}" for k in
                    ('total', 'agreement', 'activation', 'redistribution', 'rebuild')]
            row += [f"{median([s[k] for s in stops]):.3f}" for k in ('total', 'write', 'read', 'relaunch')]
            row.append(f'{median(ratios):.0f}x ({min(ratios):.0f}-{max(ratios):.0f})')
            print('| ' + ' | '.join(row) + ' |')
    if opts.json:
        with open(opts.json, 'w') as f:
            json.dump({str(k): v for k, v in results.items()}, f, indent=1)


if __name__ == '__main__':
    main()
