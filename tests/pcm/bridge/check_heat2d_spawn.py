#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""heat2d in spawn mode (Open MPI): random seeded sequences of split, merge and migrate over two virtual nodes, new
processes started with MPI_Comm_spawn on the named node; every run must print the static checksum, carry out every
operation and end at the size the sequence leads to, and the sequences together must reach 1 process and more
processes than cores. These runs start new processes while the program waits (MALLEO_PCM_SPAWN=wait), so each
operation happens at the iteration its schedule names. Then: a forced spawn failure and a spawn on an undescribed node
leave the run intact with one failure line; a spawned process runs on its node's CPUs (/proc/<pid>/status) with its
node's MALLEO_NODE and MALLEO_AGENT in its environment (/proc/<pid>/environ); and in the background (the default):
the program computes on while the processes start, a forced command falling due meanwhile is refused as busy, the
split happens at a later probe, and a run that ends while its processes start ends cleanly with the split reported
failed. With --prepared (the C++ API, whose buffers the bridge knows before an operation), every operation that
started processes must show in the coordinator's phase records that its new processes had allocated and faulted in
their blocks while they started (joiners_prepared). With --shared (MALLEO_PCM_SHARED_PAGES=on, a grid of 1024 x
1536 doubles: heat1d_cpp's rod or heat2d's columns), every operation must have taken the data over by its pages but
for the ends of its transfers, between the launched and the spawned processes as between processes of one job."""

import argparse
import json
import os
import re
import subprocess
import tempfile

import check_heat2d_sequences
import pcm_launch

NODES = {'n1': '0', 'n2': '1'}


def sequence(rng, weights):
    """A feasible random schedule over nodes n1, n2: (MALLEO_FORCE, ops, start size, final size, sizes seen).
    weights: 'none', 'shrink' (on merges and migrations: a PCM_Split rewrites its buffer in place, so a weighted
    split could need a bigger one) or 'all'."""
    start = rng.randint(1, 3)
    active = ['n1'] * start  # the node of each slot
    entries, ops, sizes = [], [], [start]
    at = rng.randint(1, 3)
    while at < 24 and len(ops) < 4:
        choices = ['split', 'split'] if len(active) < 5 else []
        if len(active) > 1:
            choices += ['merge', 'merge']
        choices += ['migrate']
        op = rng.choice(choices)
        node = rng.choice(sorted(NODES))
        if op == 'split':
            # The bridge's slots (plan.cpp): each process followed by count // n joiners, the first count % n by
            # one more.
            count = rng.randint(1, min(3, 5 - len(active)))
            n = len(active)
            active = [x for i, slot in enumerate(active) for x in [slot] + [node] * (count // n + (i < count % n))]
            text = f'split@{at}:{count}/{node}'
        elif op == 'merge':
            # Under the C API the last slots leave.
            count = rng.randint(1, len(active) - 1)
            del active[len(active) - count:]
            text = f'merge@{at}:{count}'
        else:
            off = [i for i, n in enumerate(active) if n != node]
            if not off:
                continue
            count = rng.randint(1, min(2, len(off)))
            for i in off[:count]:
                active[i] = node
            text = f'migrate@{at}:{count}/{node}'
        if weights == 'all' or weights == 'shrink' and op != 'split':
            text += '/w=' + ','.join(str(rng.randint(1, 4)) for _ in active)
        entries.append(text)
        ops.append(op)
        sizes.append(len(active))
        at += rng.randint(2, 5)
    return ','.join(entries), ops, start, len(active), sizes


def base_env(spawn='wait'):
    """Private buffers, whose joiners prepare their blocks while they start; --shared's sequences turn shared blocks
    on."""
    return {'MALLEO_PCM_MODE': 'spawn', 'MALLEO_PCM_SPAWN': spawn, 'MALLEO_NODE': 'n1',
            'MALLEO_NODES': ';'.join(f'{n}={c}' for n, c in sorted(NODES.items())), 'MALLEO_PCM_SHARED_PAGES': 'off'}


BACKGROUND = re.compile(r'^malleo-pcm: split at iteration (\d+) took [0-9.]+ s: .* \(processes started in the '
                        r'background: ([0-9.]+) s over (\d+) probes', re.M)


def check_background(opts, grid):
    """The default: processes start on a helper thread while heat2d computes. A run long enough for the spawn
    (400 iterations of at least 10 ms) splits at a later probe than the one that asked, after probes that went on
    meanwhile, and refuses the merge forced at iteration 3 as busy; a run of 3 iterations ends before the processes
    are there, and ends cleanly with the split reported failed."""
    failures = []
    long_grid = grid[:-1] + ['400', '--pace', '10']
    env = dict(base_env('background'), MALLEO_FORCE='split@2:2/n2,merge@3:1', MALLEO_PCM_VERBOSE=1)
    proc = pcm_launch.run(opts.mpi, 1, [opts.program] + long_grid, env, timeout=120)
    # --pace changes how long an iteration lasts, not what it computes.
    problems = check_run(proc, pcm_launch.static_checksum(opts.mpi, [opts.program] + long_grid[:-2]), 3, ['split'],
                         [r"^malleo-pcm: merge at iteration 3 failed: busy: the split of iteration 2 is still starting "
                          r"its processes; continuing with 1 process$"])
    found = BACKGROUND.findall(proc.stderr)
    done = pcm_launch.completed_operations(proc)
    if len(found) != 1 or int(found[0][2]) < 2 or int(found[0][0]) != 2 + int(found[0][2]) or \
            [d[1] for d in done] != [int(found[0][0])]:
        problems.append(f'background split records {found}, operations {done}: expected one split after at least 2 '
                        'probes that went on while its processes started, at iteration 2 + those probes')
    print(f'{"ok" if not problems else "FAIL"}: split with its processes started in the background: {found}')
    if problems:
        failures.append('background: ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))

    short_grid = grid[:-1] + ['3']
    env = dict(base_env('background'), MALLEO_FORCE='split@1:2/n2', MALLEO_PCM_VERBOSE=1)
    proc = pcm_launch.run(opts.mpi, 1, [opts.program] + short_grid, env)
    problems = check_run(proc, pcm_launch.static_checksum(opts.mpi, [opts.program] + short_grid), 1, [],
                         [r"^malleo-pcm: split at iteration 1 failed: the run ended while its new processes were "
                          r"starting; continuing with 1 process$"])
    print(f'{"ok" if not problems else "FAIL"}: a run that ends while its processes start')
    if problems:
        failures.append('ended while starting: ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))
    return failures


def unprepared(phases):
    """(problems, operations that started processes): those whose new processes had not prepared their blocks."""
    if not os.path.exists(phases):
        return ['no phase records (MALLEO_PCM_PHASES)'], 0
    problems, spawning = [], 0
    with open(phases, encoding='utf-8') as f:
        for record in map(json.loads, f):
            if record['spawn'] <= 0:
                continue
            spawning += 1
            if record['joiners_prepared'] <= 0:
                problems.append(f'{record["operation"]} at {record["iteration"]} started processes that prepared '
                                f'nothing ({record})')
    return problems, spawning


def check_run(proc, want, final=None, ops=None, failures_expected=()):
    problems = []
    if proc.returncode != 0:
        problems.append(f'exit code {proc.returncode}')
    if pcm_launch.checksum(proc) != want:
        problems.append(f'checksum {pcm_launch.checksum(proc)} != static {want}')
    if final is not None and pcm_launch.final_processes(proc) != final:
        problems.append(f'final size {pcm_launch.final_processes(proc)} != {final}')
    if ops is not None and [op for op, *_ in pcm_launch.completed_operations(proc)] != ops:
        problems.append(f'operations done {pcm_launch.completed_operations(proc)} != {ops}')
    reports = re.findall(r'^malleo-pcm: .* failed: .*$', proc.stderr, re.M)
    if len(reports) != len(failures_expected) or not all(re.search(e, r) for e, r in
                                                          zip(failures_expected, reports)):
        problems.append(f'failure reports {reports}, expected {list(failures_expected)}')
    return problems


def check_binding(opts, grid, want):
    """A process spawned for n2: bound to CPU 1, MALLEO_NODE=n2, MALLEO_AGENT of n2's run directory."""
    cluster = tempfile.mkdtemp(prefix='malleo-spawn-')
    env = dict(base_env(), MALLEO_FORCE='split@2:1/n2', MALLEO_PCM_VERBOSE=1, MALLEO_CLUSTER_DIR=cluster)
    long_grid = grid[:-1] + ['4000']
    cmd = pcm_launch.command(opts.mpi, 1, env, [opts.program] + long_grid)
    proc = subprocess.Popen(cmd, env=pcm_launch.environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    problems, seen = [], None
    for line in proc.stderr:
        found = re.match(r'malleo-pcm: spawned world rank \d+ \(pid (\d+)\) on node (\S+):', line)
        if found:
            pid = found.group(1)
            # The process lives until the run's end: it computes its share of the 4000 iterations.
            with open(f'/proc/{pid}/status') as f:
                cpus = re.search(r'^Cpus_allowed_list:\s*(\S+)$', f.read(), re.M).group(1)
            with open(f'/proc/{pid}/environ', 'rb') as f:
                environ = dict(e.split('=', 1) for e in f.read().decode().split('\0') if '=' in e)
            seen = (found.group(2), cpus, environ.get('MALLEO_NODE'), environ.get('MALLEO_AGENT'))
            break
    out, err = proc.communicate(timeout=120)
    agent = f'ipc://{cluster}/n2/agent.sock'
    if seen != ('n2', NODES['n2'], 'n2', agent):
        problems.append(f'spawned process (node, Cpus_allowed_list, MALLEO_NODE, MALLEO_AGENT) = {seen}, '
                        f'expected {("n2", NODES["n2"], "n2", agent)}')
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    problems += check_run(done, pcm_launch.static_checksum(opts.mpi, [opts.program] + long_grid), final=2)
    os.rmdir(cluster)
    return problems, done


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', default='openmpi')
    ap.add_argument('--sequences', type=int, required=True)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--weights', choices=['none', 'shrink', 'all'], default='none',
                    help='random weights on the operations (docs/pcm-api.md, MALLEO_FORCE)')
    ap.add_argument('--cases', action='store_true', help='also the failure and binding cases')
    ap.add_argument('--prepared', action='store_true',
                    help='check that the new processes prepared their blocks (C++ API programs)')
    ap.add_argument('--shared', action='store_true',
                    help='buffers in shared blocks; check that the operations took the data over')
    ap.add_argument('program')
    opts = ap.parse_args()
    rows, columns = (1024, 1536) if opts.shared else (16, 30)
    grid = ['--rows', str(rows), '--columns', str(columns), '--iterations', '30']
    want = pcm_launch.static_checksum(opts.mpi, [opts.program] + grid)

    failures, seen, spawning = [], set(), 0
    for index, (force, ops, start, final, sizes) in check_heat2d_sequences.chosen_sequences(
            opts, lambda rng: sequence(rng, opts.weights), 200):
        seen.update(sizes)
        env = dict(base_env(), MALLEO_FORCE=force, MALLEO_PCM_VERBOSE=1)
        if opts.shared:
            env['MALLEO_PCM_SHARED_PAGES'] = 'on'
        with tempfile.TemporaryDirectory() as tmp:
            env['MALLEO_PCM_PHASES'] = os.path.join(tmp, 'phases.jsonl')
            proc = pcm_launch.run(opts.mpi, start, [opts.program] + grid, env)
            problems = check_run(proc, want, final, ops)
            if opts.prepared:
                more, started = unprepared(env['MALLEO_PCM_PHASES'])
                problems += more
                spawning += started
            if opts.shared:
                records = []
                if os.path.exists(env['MALLEO_PCM_PHASES']):
                    with open(env['MALLEO_PCM_PHASES'], encoding='utf-8') as f:
                        records = [json.loads(line) for line in f]
                # heat2d's elements are columns of `rows` doubles, heat1d_cpp's single doubles: the larger bound.
                problems += check_heat2d_sequences.shared_problems(records, rows * columns * 8, rows * 8)
                if len(records) != len(ops):
                    problems.append(f'{len(records)} phase records for {len(ops)} operations')
        print(f'{"ok" if not problems else "FAIL"}: sequence {index} start {start} MALLEO_FORCE={force} '
              f'sizes {sizes}')
        if problems:
            failures.append(f'sequence {index} ({force}): ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))
    if opts.sequences and (1 not in seen or max(seen) <= os.cpu_count()):
        failures.append(f'the sequences saw sizes {sorted(seen)}: need 1 and more than {os.cpu_count()}')
    if opts.prepared and not spawning:
        failures.append('--prepared: no operation of the sequences started processes, so nothing was checked')

    if opts.cases:
        cases = [
            ('forced spawn failure', 'split@4:2/n2,split@9:1/n2', 'spawn@4', 2, ['split'],
             [r"^malleo-pcm: split at iteration 4 failed: spawning 2 processes on node 'n2' failed: "
              r"injected spawn fault; continuing with 1 process$"]),
            ('undescribed node', 'split@4:1/n7,merge@9:1', '', 1, [],
             [r"split at iteration 4 failed: split of 1: no node 'n7' in MALLEO_NODES \(n1, n2\); continuing "
              r"with 1 process$",
              r"merge at iteration 9 failed: merge of 1: only 1 active process; continuing with 1 process$"]),
        ]
        for name, force, fault, final, ops, lines in cases:
            env = dict(base_env(), MALLEO_FORCE=force, MALLEO_PCM_VERBOSE=1)
            if fault:
                env['MALLEO_FAULT'] = fault
            proc = pcm_launch.run(opts.mpi, 1, [opts.program] + grid, env)
            problems = check_run(proc, want, final, ops, lines)
            print(f'{"ok" if not problems else "FAIL"}: {name}')
            if problems:
                failures.append(f'{name}: ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))
        failures += check_background(opts, grid)
        problems, proc = check_binding(opts, grid, want)
        print(f'{"ok" if not problems else "FAIL"}: spawned process bound to its node, reporting to its agent')
        if problems:
            failures.append('binding: ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))

    pcm_launch.verdict(failures, f'{len(failures)} problems',
                       f'{opts.sequences} spawn-mode sequences (weights: {opts.weights}) gave the static checksum '
                       f'{want}')


if __name__ == '__main__':
    main()
