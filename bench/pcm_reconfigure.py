#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Split and merge against stop-restart on heat2d's grid, as in seeds 000 and 003 (docs/performance.md,
"Reconfiguration").

For each grid size, in one run, interleaved round-robin and repeated (medians reported):
- pool mode: split: heat2d launched over-allocated (FROM of TO processes active), MALLEO_FORCE=split@K; merge: TO
  launched and active, MALLEO_FORCE=merge@K back to FROM.
- spawn-wait mode: one run launched on FROM processes, MALLEO_PCM_MODE=spawn, MALLEO_PCM_SPAWN=wait,
  MALLEO_FORCE=split@K,merge@K+G: the split starts its TO - FROM processes with MPI_Comm_spawn while the application
  waits, and the merge, G probes later (--merge-gap, default 4), takes the spawned processes away again. The gap
  gives the merge the steady state the pool mode's has: in the first iteration after a split every heat2d process
  allocates and first touches a new buffer, and a merge at the next probe would wait in its agreement for the
  slowest of them (docs/performance.md).
- spawn mode (the bridge's default, MALLEO_PCM_SPAWN=background): the same, but the split's processes start on a
  helper thread while heat2d goes on computing, and the split happens at the first probe after they are there. The
  split is forced at K + 8 (so that the iteration time before it is measured on 8 warm iterations), and the merge
  at every iteration from some probe F on (MALLEO_FORCE=split@K+8,merge@F,merge@F+1,...): those falling due while
  the processes start are refused as busy, the first one after the split is carried out, the rest find too few
  processes. F is chosen so that the merge comes at least G probes after the split: a run where it came sooner is
  repeated with F at twice the probes the spawn took plus G (and the next round of the size starts from there), a
  run that ends before the split happened with twice the iterations. Besides the split's
  own time (what the application waited for at that probe), the record gives the spawn's duration in the
  background, the probes it overlapped and the iteration time before it: `lost` = background duration - probes x
  iteration time is what the overlapped iterations lost to the spawn (the processes' start competes for the same
  cores), and `felt` = split + max(lost, 0) is the split's whole cost to the application.
- The bridge's own timer (MALLEO_PCM_PHASES) gives the reconfiguration time at the coordinator, broken down into
  agreement, spawn, activation, redistribution and rebuild; a spawn-mode split whose record shows no spawn (in
  either way) or the wrong process counts stops the benchmark.
- stop-restart: heat2d on FROM processes stopped at iteration K with --checkpoint (gathered through rank 0 into a
  file), relaunched on TO with --restart (rank 0 reads, scatters); and TO -> FROM for the merge's counterpart. Its
  cost is wall(stop run) + wall(restart run) - wall(a static run of the same K iterations on the first size): what
  is left is the checkpoint (gather + write), a second launch of mpirun and MPI, and the read and scatter. The
  program's own lines give the write and read times; the remainder is the relaunch.

The ratio is stop-restart / split (or merge) of the same round: how many times faster the in-memory
reconfiguration is; for the spawn mode also stop-restart / felt.

The iterations after: a reconfiguration leaves the application buffers whose pages its next pass touches first, a
cost the bridge's timer does not see; so does a restart (the restarted job's second grid, and its first pass over
the columns it read). heat2d --times gives rank 0's wall time of every iteration, its probe included; `after` = the
operation's iteration less the operation and a steady iteration, plus the next iteration less a steady one (steady:
the median of the up to AFTER iterations after those two, before the next operation). Every run goes on AFTER
iterations past its last operation for it; the static and restarted runs of stop-restart go on AFTER + 1 past the
checkpoint's iteration, their times are taken off their walls (so stop-restart's own figure stays what it was), and
the restarted job's `after` is its first iteration less a steady one plus the next less a steady one. The last table
gives (stop-restart + its after) / (operation, or felt, + after). A heat2d without --times (an older build, in
bench/pcm_compare_builds.py) leaves that table out.

Memory: on the development VM, memory the guest freed more than about 2 s ago has been handed back to the host
(free page reporting) and costs a host fault per page at first touch (0.38 GB/s against 3.5 GB/s; bench/first_touch,
docs/performance.md). Which runs met cold memory would then depend on what ran just before them. So before every
launch, of every variant, the script touches and frees --warm-mb MiB (bench/first_touch), which leaves the guest warm
memory for the run, as a machine without page reporting has; --warm-mb 0 measures the VM as it comes. --mode pool,spawn,spawn-wait measures all three
in each round, against the same stop-restart runs. Every launch, of every variant, names Open MPI's ob1
point-to-point layer, as `malleo run` does on a host without InfiniBand or Omni-Path: Open MPI's own choice first
tries cm, whose libraries add about 0.2 s to every MPI_Init and spawn on Debian (bench/mpi_start.sh);
--ompi-pml default measures that. The 1-min load average is sampled after each size of each round and summarised
in the table's heading."""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python'))
from testkit import LAUNCHERS, launcher_command, launcher_env, sole_checksum  # noqa: E402,F401

COLUMN_BYTES = 8 * 1024  # a column of --rows 1024 doubles


def launch(mpi, ranks, program, env_for_ranks, pml=None):
    """(wall seconds, completed process) of one mpirun; `pml`: Open MPI's point-to-point layer, None for its own
    choice."""
    cmd = launcher_command(mpi, ranks, env_for_ranks, program, ['--mca', 'pml', pml] if pml else [])
    env = launcher_env(drop=('MALLEO_', 'OMPI_MCA_pml'))
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    return time.monotonic() - start, proc


def memory_warmer(program, warm_mb):
    """A function that touches and frees warm_mb MiB of memory (see the module's header; 0: does nothing), with the
    bench/first_touch of the build that holds `program` (the nearest folder above it that has one)."""
    if not warm_mb:
        return lambda: None
    build = os.path.dirname(os.path.abspath(program))
    while build != '/' and not os.access(os.path.join(build, 'bench', 'first_touch'), os.X_OK):
        build = os.path.dirname(build)
    first_touch = os.path.join(build, 'bench', 'first_touch')
    if not os.access(first_touch, os.X_OK):
        sys.exit(f'no bench/first_touch in a folder above {program} (ninja -C BUILD bench/first_touch), '
                 'or use --warm-mb 0')
    return lambda: subprocess.run([first_touch, str(warm_mb), '1'], stdout=subprocess.DEVNULL, check=True)


def checksum(proc):
    return sole_checksum(proc.stdout)


def fail(what, proc):
    sys.exit(f'{what} failed (rc {proc.returncode})\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n'
             f'{proc.stderr[-2000:]}')


class Bench:
    def __init__(self, opts, folder):
        self.opts = opts
        self.folder = folder
        self.heat2d = os.path.abspath(opts.heat2d)
        self.env = dict(opts.env)  # more environment for every launch (--env; pcm_compare_builds sets it per build)
        self.merge_from = {}  # MiB -> the first probe of the background spawn mode's forced merges
        self.warm = memory_warmer(self.heat2d, opts.warm_mb)
        # heat2d --times (since 2026-11-25) gives the iterations around each operation; an older build runs without.
        usage = subprocess.run([self.heat2d, '--help'], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        self.times = '--times' in usage.stdout + usage.stderr

    def launch(self, ranks, program, env_for_ranks):
        """launch(), after warming --warm-mb MiB of memory (see the module's header)."""
        self.warm()
        return launch(self.opts.mpi, ranks, program, dict(env_for_ranks, **self.env),
                      None if self.opts.ompi_pml == 'default' else self.opts.ompi_pml)

    def grid(self, megabytes, iterations, times=False):
        columns = megabytes * (1 << 20) // COLUMN_BYTES
        return [self.heat2d, '--rows', '1024', '--columns', str(columns), '--iterations', str(iterations)] + \
            (['--times'] if times and self.times else [])

    def phases(self, what, megabytes, ranks, iterations, env, expected):
        """The bridge's phase records of one run, which must be the operations `expected`, in order (None: any)."""
        path = os.path.join(self.folder, 'phases.json')
        if os.path.exists(path):
            os.remove(path)
        _, proc = self.launch(ranks, self.grid(megabytes, iterations, times=True), dict(env, MALLEO_PCM_PHASES=path))
        if proc.returncode != 0 or not checksum(proc):
            fail(f'{what} at {megabytes} MiB', proc)
        if not os.path.exists(path) and expected is None:
            return []
        if not os.path.exists(path):
            sys.exit(f'{what} at {megabytes} MiB: no MALLEO_PCM_PHASES record (a libmalleo_pcm without phase timing? '
                     'rebuild it)')
        with open(path) as f:
            records = [json.loads(line) for line in f if line.strip()]
        if expected is not None and [r['operation'] for r in records] != expected or \
                any('spawn_background' not in r for r in records):
            sys.exit(f'{what} at {megabytes} MiB: phase records {records}, expected {expected} with a spawn phase '
                     '(rebuild libmalleo_pcm)')
        times = iteration_times(proc)
        if self.times and not times:
            sys.exit(f'{what} at {megabytes} MiB: heat2d --times printed no "time: iteration" line')
        for record, following in zip(records, records[1:] + [None]):
            record['paid_after'] = cost_after(record, times, following['iteration'] if following else None)
        return records

    def pool(self, megabytes, op):
        """The phases of one split or merge in pool mode."""
        o = self.opts
        env = {'MALLEO_FORCE': f'{op}@{o.at}:{o.to - o.frm}', 'MALLEO_POOL_ACTIVE': o.frm if op == 'split' else o.to}
        return self.phases(f'pool {op}', megabytes, o.to, o.at + 1 + AFTER, env, [op])[0]

    def spawn_wait(self, megabytes):
        """The phases of a split that spawns its processes while the application waits, and of the merge that takes
        them away: two dicts."""
        o = self.opts
        count = o.to - o.frm
        merge_at = o.at + o.merge_gap
        env = {'MALLEO_FORCE': f'split@{o.at}:{count},merge@{merge_at}:{count}', 'MALLEO_PCM_MODE': 'spawn',
               'MALLEO_PCM_SPAWN': 'wait'}
        split, merge = self.phases('spawn split and merge', megabytes, o.frm, merge_at + 1 + AFTER, env,
                                   ['split', 'merge'])
        # Launched on FROM processes, the split can only have reached TO by spawning.
        if (split['before'], split['after'], merge['after']) != (o.frm, o.to, o.frm) or split['spawn'] <= 0:
            sys.exit(f'spawn split at {megabytes} MiB did not spawn: {split}')
        return split, merge

    def spawn_background(self, megabytes):
        """The same with the processes started in the background (the bridge's default)."""
        o = self.opts
        count = o.to - o.frm
        # Later than --at, so that the iteration time before the split is measured on warm iterations.
        at = o.at + 8
        # The merges are forced from `first` on, which must come at least --merge-gap probes after the split: a
        # merge that falls due while the processes start is refused as busy, and the first one after the split
        # would come one probe after it. `first` starts from what the previous round of this size needed.
        first = self.merge_from.get(megabytes, at + 1 + o.merge_gap)
        iterations = max(at + 30, first + 2 * o.merge_gap)
        while True:
            merges = ','.join(f'merge@{i}:{count}' for i in range(first, iterations - 1))
            env = {'MALLEO_FORCE': f'split@{at}:{count},{merges}', 'MALLEO_PCM_MODE': 'spawn',
                   'MALLEO_PCM_SPAWN': 'background'}
            records = self.phases('spawn split and merge in the background', megabytes, o.frm, iterations, env,
                                  None)
            operations = [r['operation'] for r in records]
            if operations == ['split', 'merge'] and records[1]['iteration'] - records[0]['iteration'] >= o.merge_gap:
                break
            if iterations > 100000:
                sys.exit(f'background spawn at {megabytes} MiB: no split and merge {o.merge_gap} probes apart in '
                         f'{iterations} iterations: {records}')
            if operations and operations[0] == 'split':
                # Twice the probes the spawn took, so that a slower spawn next time still fits.
                first = at + 2 * (records[0]['iteration'] - at) + o.merge_gap
                iterations = max(iterations, first + 2 * o.merge_gap)
            else:
                iterations *= 2
        self.merge_from[megabytes] = first
        split, merge = records
        if (split['before'], split['after'], merge['after']) != (o.frm, o.to, o.frm) or \
                split['spawn_background'] <= 0 or split['probes_overlapped'] < 1:
            sys.exit(f'spawn split at {megabytes} MiB did not spawn in the background: {split}')
        split['lost'] = split['spawn_background'] - split['probes_overlapped'] * split['probe_interval_before']
        split['felt'] = split['total'] + max(split['lost'], 0.0)
        return split, merge

    def operations(self, megabytes, mode):
        """{'split': phases, 'merge': phases} of one round in `mode` (pool, spawn or spawn-wait)."""
        if mode == 'spawn':
            return dict(zip(('split', 'merge'), self.spawn_background(megabytes)))
        if mode == 'spawn-wait':
            return dict(zip(('split', 'merge'), self.spawn_wait(megabytes)))
        return {op: self.pool(megabytes, op) for op in ('split', 'merge')}

    def stop_restart(self, megabytes, before, after):
        """Seconds of one stop-restart from `before` to `after` processes and its parts. With heat2d --times the
        static and the restarted runs do AFTER + 1 iterations more, from the checkpoint's on, whose times come off
        their walls again, and `paid_after` is what the restarted job's first iterations paid, as for the operations."""
        o = self.opts
        path = os.path.join(self.folder, 'heat2d.ckpt')
        more = AFTER + 1 if self.times else 0  # as many as an operation's run has from its operation on
        static_wall, static = self.launch(before, self.grid(megabytes, o.at + more, times=True), {})
        stop_wall, stop = self.launch(before,
                                 self.grid(megabytes, o.at + 1) + ['--checkpoint', path, '--checkpoint-at', str(o.at)],
                                 {})
        if stop.returncode != 0:
            fail(f'checkpoint at {megabytes} MiB', stop)
        go_wall, go = self.launch(after, self.grid(megabytes, o.at + more, times=True) + ['--restart', path], {})
        os.remove(path)
        if go.returncode != 0 or checksum(go) != checksum(static):
            fail(f'restart at {megabytes} MiB (checksum {checksum(go)} against {checksum(static)})', go)
        write = float(re.search(r'^checkpoint: .* in ([0-9.]+) s$', stop.stdout, re.M).group(1))
        read = float(re.search(r'^restart: .* in ([0-9.]+) s$', go.stdout, re.M).group(1))
        paid_after = None
        if more:
            static_times, go_times = iteration_times(static), iteration_times(go)
            added = range(o.at, o.at + more)
            if any(i not in static_times or i not in go_times for i in added):
                fail(f'restart at {megabytes} MiB: heat2d --times lacks iterations {o.at}-{o.at + more - 1}', go)
            static_wall -= sum(static_times[i] for i in added)
            go_wall -= sum(go_times[i] for i in added)
            paid_after = cost_after({'iteration': o.at, 'total': 0.0}, go_times, None)
        total = stop_wall + go_wall - static_wall
        return {'total': total, 'write': write, 'read': read, 'relaunch': total - write - read,
                'paid_after': paid_after}


# Iterations a run goes on after its last operation: the operation's own, the next one, and steady ones to compare.
AFTER = 4


def iteration_times(proc):
    """{iteration: rank 0's wall time of it} from heat2d --times."""
    return {int(k): float(v) for k, v in
            re.findall(r'^time: iteration (\d+) ([0-9.]+) s on \d+ processes$', proc.stdout, re.M)}


def cost_after(record, times, end):
    """What the iterations after an operation paid beyond the operation and their steady length, from heat2d
    --times (rank 0's wall time of each iteration, its probe included): the operation's iteration less the operation
    and a steady iteration, plus the next one less a steady one. Steady: the median of the iterations after those two,
    before `end` (the next operation's iteration, None: the run's end). None without the times."""
    k = record['iteration']
    later = [times[i] for i in range(k + 2, k + 2 + AFTER) if i in times and (end is None or i < end)]
    if k not in times or k + 1 not in times or not later:
        return None
    steady = statistics.median(later)
    return (times[k] - record['total'] - steady) + (times[k + 1] - steady)


def whole(record):
    """An operation as the application felt it (a background split's lost iterations included), or a stop-restart,
    plus what the iterations after it paid (cost_after)."""
    return record.get('felt', record['total']) + record['paid_after']


def median(values):
    return statistics.median(values) if values else float('nan')


def ratio(value):
    """A ratio as the tables print it: whole numbers from 10 up, one decimal below."""
    return f'{value:.0f}' if value >= 10 else f'{value:.1f}'


def arguments():
    """The command line's parser; bench/pcm_compare_builds.py takes its defaults from it."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--mpi', choices=sorted(LAUNCHERS), default='openmpi')
    ap.add_argument('--mode', default='pool',
                    help='how the split gets its processes: pool, spawn (in the background) or spawn-wait, '
                    'comma-separated (pool,spawn,spawn-wait: all three)')
    ap.add_argument('--heat2d', help='the heat2d program of that MPI (default build/examples/heat2d/heat2d_MPI)')
    ap.add_argument('--sizes-mb', default='10,100,300', help='grid sizes in MiB, comma-separated')
    ap.add_argument('--repeats', type=int, default=5, help='rounds; medians are reported')
    ap.add_argument('--from', dest='frm', type=int, default=2, help='processes before a split / after a merge')
    ap.add_argument('--to', type=int, default=4, help='processes after a split / before a merge')
    ap.add_argument('--at', type=int, default=2, help='the iteration of the reconfiguration or checkpoint')
    ap.add_argument('--merge-gap', type=int, default=4,
                    help='spawn modes: probes from the split to the merge that takes its processes away (at least 1)')
    ap.add_argument('--json', help='also write every measurement to this file')
    ap.add_argument('--warm-mb', type=int, default=2000,
                    help='MiB of memory touched and freed before every launch, so that each run gets warm memory '
                    '(0: none; see the header)')
    ap.add_argument('--ompi-pml', default='ob1',
                    help="Open MPI's point-to-point layer for every launch, the in-memory operations' and "
                    "stop-restart's alike: ob1 (the default, as `malleo run` on a host without InfiniBand or "
                    "Omni-Path) or default (Open MPI's own choice, which first tries cm: about 0.2 s more in every "
                    "MPI_Init and spawn on Debian; docs/notes/open-mpi-pml.md)")
    ap.add_argument('--env', action='append', default=[], metavar='KEY=VALUE',
                    help='more environment for every launch, the operations\' and stop-restart\'s alike (repeatable), '
                    'e.g. MALLEO_PCM_SHARED_PAGES=on')
    return ap


def main():
    ap = arguments()
    opts = ap.parse_args()
    if any('=' not in pair for pair in opts.env):
        ap.error('--env takes KEY=VALUE')
    opts.env = dict(pair.split('=', 1) for pair in opts.env)
    opts.heat2d = opts.heat2d or f'build/examples/heat2d/heat2d_{opts.mpi}'
    if not os.access(opts.heat2d, os.X_OK):
        sys.exit(f'{opts.heat2d} is not an executable heat2d (build it, or name it with --heat2d)')
    if not 1 <= opts.frm < opts.to or opts.repeats < 1 or opts.at < 1 or opts.warm_mb < 0 or opts.merge_gap < 1:
        sys.exit('need 1 <= --from < --to, --repeats >= 1, --at >= 1, --warm-mb >= 0 and --merge-gap >= 1')
    try:
        sizes = [int(s) for s in opts.sizes_mb.split(',')]
    except ValueError:
        sys.exit(f'--sizes-mb {opts.sizes_mb}: expected integers separated by commas')
    modes = opts.mode.split(',')
    if not modes or any(m not in ('pool', 'spawn', 'spawn-wait') for m in modes) or len(set(modes)) != len(modes):
        sys.exit(f'--mode {opts.mode}: expected pool, spawn, spawn-wait or several of them, comma-separated')
    if any(m.startswith('spawn') for m in modes) and opts.mpi != 'openmpi':
        sys.exit('--mode spawn needs Open MPI (the bridge spawns only there)')

    operations = [(mode, op) for mode in modes for op in ('split', 'merge')]
    results = {size: {key: [] for key in operations + ['restart+', 'restart-']} for size in sizes}
    loads = []
    with tempfile.TemporaryDirectory(dir=os.environ.get('TMPDIR', '/tmp')) as folder:
        bench = Bench(opts, folder)
        for round_ in range(opts.repeats):
            for size in sizes:
                for mode in modes:
                    for op, record in bench.operations(size, mode).items():
                        results[size][(mode, op)].append(record)
                results[size]['restart+'].append(bench.stop_restart(size, opts.frm, opts.to))
                results[size]['restart-'].append(bench.stop_restart(size, opts.to, opts.frm))
                loads.append(os.getloadavg()[0])
            print(f'round {round_ + 1} of {opts.repeats} done, load average {os.getloadavg()[0]:.2f}', file=sys.stderr)

    print(f'heat2d, {opts.mpi}, {" and ".join(modes)} mode, {opts.frm} <-> {opts.to} processes, medians of '
          f'{opts.repeats} interleaved rounds (seconds); 1-min load average {min(loads):.1f}-{max(loads):.1f} '
          f'(median {median(loads):.1f}) after each size of each round; {opts.warm_mb} MiB warmed before each launch'
          + (f'; Open MPI pml {opts.ompi_pml}' if opts.mpi == 'openmpi' else '')
          + ''.join(f'; {key}={value}' for key, value in opts.env.items()))
    print('| MiB | mode | operation | reconfiguration | agreement | spawn | activation | redistribution | rebuild | '
          'stop-restart | write | read + scatter | relaunch | stop-restart / operation |')
    print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    background, afterwards = [], []
    for size in sizes:
        for op, restart in (('split', 'restart+'), ('merge', 'restart-')):
            for mode in modes:
                ops, stops = results[size][(mode, op)], results[size][restart]
                ratios = [s['total'] / o['total'] for o, s in zip(ops, stops)]
                before, after = (opts.frm, opts.to) if op == 'split' else (opts.to, opts.frm)
                row = [str(size), mode, f'{op} {before} -> {after}']
                row += [f"{median([o[k] for o in ops]):.4f}" for k in
                        ('total', 'agreement', 'spawn', 'activation', 'redistribution', 'rebuild')]
                row += [f"{median([s[k] for s in stops]):.3f}" for k in ('total', 'write', 'read', 'relaunch')]
                row.append(f'{ratio(median(ratios))}x ({ratio(min(ratios))}-{ratio(max(ratios))})')
                print('| ' + ' | '.join(row) + ' |')
                paid = [(o, s) for o, s in zip(ops, stops)
                        if o.get('paid_after') is not None and s['paid_after'] is not None]
                if paid:
                    # The operation and what the iterations after it paid (whole), against stop-restart with what
                    # its restarted job's first iterations paid; a run whose times lack those iterations is left out.
                    felt_times = [o.get('felt', o['total']) for o, _ in paid]
                    wholes = [whole(o) for o, _ in paid]
                    stop_whole = [whole(s) for _, s in paid]
                    whole_ratios = [sw / w for sw, w in zip(stop_whole, wholes)]
                    afterwards.append([str(size), mode, f'{op} {before} -> {after}', f'{median(felt_times):.4f}',
                                       f"{median([o['paid_after'] for o, _ in paid]):.4f}", f'{median(wholes):.4f}',
                                       f"{median([s['paid_after'] for _, s in paid]):.4f}", f'{median(stop_whole):.3f}',
                                       f'{ratio(median(whole_ratios))}x ({ratio(min(whole_ratios))}-'
                                       f'{ratio(max(whole_ratios))})', str(len(paid))])
                if 'felt' in ops[0]:
                    felt = [s['total'] / o['felt'] for o, s in zip(ops, stops)]
                    background.append([str(size)] + [f"{median([o[k] for o in ops]):.4f}" for k in
                                                     ('total', 'spawn_background')] +
                                      [f"{median([o['probes_overlapped'] for o in ops]):.0f}",
                                       f"{median([o['probe_interval_before'] for o in ops]):.4f}",
                                       f"{median([o['lost'] for o in ops]):.4f}",
                                       f"{median([o['felt'] for o in ops]):.4f}",
                                       f'{ratio(median(felt))}x ({ratio(min(felt))}-{ratio(max(felt))})'])
    if background:
        print()
        print('Spawn mode, the split with its processes started in the background:')
        print('| MiB | split (the wait at its probe) | spawn in the background | probes meanwhile | iteration before | '
              'lost by those iterations | felt | stop-restart / felt |')
        print('| --- | --- | --- | --- | --- | --- | --- | --- |')
        for row in background:
            print('| ' + ' | '.join(row) + ' |')
    if afterwards:
        print()
        print('With what the iterations after each operation paid (heat2d --times: its own iteration beyond the '
              'operation and a steady one, and the next beyond a steady one), and after a restart (its first '
              'iteration beyond a steady one, and the next):')
        print('| MiB | mode | operation | operation (felt) | the iterations after | whole | '
              'after the restart | stop-restart whole | stop-restart / whole | runs |')
        print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
        for row in afterwards:
            print('| ' + ' | '.join(row) + ' |')
    if opts.json:
        with open(opts.json, 'w') as f:
            json.dump({str(size): {k if isinstance(k, str) else '/'.join(k): v for k, v in runs.items()}
                       for size, runs in results.items()}, f, indent=1)


if __name__ == '__main__':
    main()
