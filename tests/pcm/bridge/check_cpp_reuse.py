#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The C++ API takes back processes that left: a process a merge or migration takes out waits parked inside
probe(), and later splits and migrations may activate it again. Runs whose sequences are impossible without that
(the pool is too small for them otherwise) must carry out every operation, activate again exactly the processes the
planning rules pick (the lowest world ranks among the spare ones; a migration's replacement in its source's slot),
and end with the static run's result lines bit for bit. Parts:

  --fixed          a fixed sequence on 3 processes, 2 active, that needs 5 activations of processes that had left
  --sequences N    random seeded sequences over a small pool, each with at least one such activation
  --parked-cpu     processes parked again after they left use under 1 % of a core while one process computes
  --spawn          spawn mode: a split takes back a process that left before it spawns (Open MPI)

The program is heat1d_cpp or astro (the arguments after the program are passed on); the result lines compared are
`checksum`, and astro's `fit:` and `stars` lines."""

import argparse
import os
import random
import re
import subprocess
import sys

import pcm_launch

RESULT = re.compile(r'^(?:fit: .*|stars .*|checksum [0-9a-f]{16})$', re.M)
DONE = re.compile(r'^malleo-pcm: (split|merge|migrate) at iteration (\d+): \d+ -> (\d+) processes '
                  r'\(world ranks ([\d,]+)\)$', re.M)
AGAIN = re.compile(r'^malleo-pcm: world rank (\d+) activated again at iteration (\d+) \((split|migrate); it left at '
                   r'iteration (\d+)\)$', re.M)
SPAWNED = re.compile(r'^malleo-pcm: spawned world rank (\d+) ', re.M)
FIXED = 'split@2:1,merge@5:1,split@8:1,merge@11:1,migrate@14:1,split@17:1,merge@20:2,split@23:2'


class Pool:
    """The bridge's planning rules for one node (no node named): which world ranks each operation activates."""

    def __init__(self, world, active):
        self.active = list(range(active))  # world ranks in slot order
        self.spare = set(range(active, world))
        self.ran = set(self.active)  # processes that have been active: activating one again is a reuse
        self.left_at = {}

    def feasible(self, op, count):
        if op == 'split':
            return 1 <= count <= len(self.spare)
        if op == 'merge':
            return 1 <= count < len(self.active)
        return 1 <= count <= min(len(self.active), len(self.spare))

    def apply(self, op, count, at):
        """Carries out the operation; returns [(world rank, iteration it had left at)] of the reused joiners."""
        joiners, leavers = [], []
        if op == 'split':
            # Each active process followed by count // n joiners, the first count % n by one more.
            joiners = sorted(self.spare)[:count]
            n, after, taken = len(self.active), [], 0
            for i, w in enumerate(self.active):
                take = count // n + (1 if i < count % n else 0)
                after += [w] + joiners[taken:taken + take]
                taken += take
            self.active = after
        elif op == 'merge':
            # The slots in n - count consecutive groups (the first ones larger by one): the first of each stays.
            groups, n, after, slot = len(self.active) - count, len(self.active), [], 0
            for g in range(groups):
                size = n // groups + (1 if g < n % groups else 0)
                after.append(self.active[slot])
                leavers += self.active[slot + 1:slot + size]
                slot += size
            self.active = after
        else:
            joiners = sorted(self.spare)[:count]
            leavers = self.active[:count]
            self.active = joiners + self.active[count:]
        again = [(w, self.left_at[w]) for w in joiners if w in self.ran]
        self.spare = (self.spare - set(joiners)) | set(leavers)
        self.ran |= set(joiners)
        for w in leavers:
            self.left_at[w] = at
        return again


def expected(world, start, force):
    """(after lists, reuses as (rank, at, op, left at)) that MALLEO_FORCE leads to on a pool of world, start."""
    pool, afters, reuses = Pool(world, start), [], []
    for entry in force.split(','):
        op, rest = entry.split('@')
        at, _, count = rest.partition(':')
        at, count = int(at), int(count or 1)
        if not pool.feasible(op, count):
            raise ValueError(f'{entry} is not feasible')
        reuses += [(w, at, op, left) for w, left in pool.apply(op, count, at)]
        afters.append((op, at, list(pool.active)))
    return afters, reuses


def random_sequence(rng, world, iterations):
    start = rng.randint(1, world - 1)
    pool, entries = Pool(world, start), []
    at = rng.randint(1, 3)
    while at < iterations - 2 and len(entries) < 7:
        op = rng.choice(['split', 'split', 'merge', 'merge', 'migrate'])
        limit = {'split': len(pool.spare), 'merge': len(pool.active) - 1,
                 'migrate': min(len(pool.active), len(pool.spare))}[op]
        if limit < 1:
            continue
        count = rng.randint(1, limit)
        pool.apply(op, count, at)
        entries.append(f'{op}@{at}:{count}')
        at += rng.randint(1, 4)
    return start, ','.join(entries)


def check_run(proc, want, world, start, force):
    """What is wrong with a pool-mode run of force: exit code, results, operations and who they activated."""
    afters, reuses = expected(world, start, force)
    problems = []
    if proc.returncode != 0:
        problems.append(f'exit code {proc.returncode}')
    if RESULT.findall(proc.stdout) != want:
        problems.append(f'result lines {RESULT.findall(proc.stdout)} != static {want}')
    if pcm_launch.final_processes(proc) != len(afters[-1][2]):
        problems.append(f'final size {pcm_launch.final_processes(proc)} != {len(afters[-1][2])}')
    # Each operation's line comes from its new rank 0: lines of different processes reach mpirun's stderr in any
    # order, so they are put back in iteration order (one operation per iteration).
    done = sorted(((op, int(at), [int(w) for w in ranks.split(',')]) for op, at, _, ranks in
                   DONE.findall(proc.stderr)), key=lambda entry: entry[1])
    if done != afters:
        problems.append(f'operations done {done} != expected {afters}')
    again = sorted((int(w), int(at), op, int(left)) for w, at, op, left in AGAIN.findall(proc.stderr))
    if again != sorted(reuses):
        problems.append(f'activations of processes that had left {again} != expected {sorted(reuses)}')
    if 'failed' in proc.stderr:
        problems.append('an operation failed')
    return problems, reuses


def run_pool(opts, world, start, force):
    env = {'MALLEO_POOL_ACTIVE': start, 'MALLEO_FORCE': force, 'MALLEO_PCM_VERBOSE': 1}
    return pcm_launch.run(opts.mpi, world, opts.command, env)


def fixed(opts, want):
    proc = run_pool(opts, 3, 2, FIXED)
    problems, reuses = check_run(proc, want, 3, 2, FIXED)
    if len(reuses) != 5:
        problems.append(f'the fixed sequence should reuse 5 times, the model says {reuses}')
    print(f'{"ok" if not problems else "FAIL"}: 3 processes, 2 active, MALLEO_FORCE={FIXED}: '
          f'{len(AGAIN.findall(proc.stderr))} activations of processes that had left')
    return [f'fixed sequence: ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc)] if problems else []


def sequences(opts, want):
    rng = random.Random(opts.seed)
    failures, total = [], 0
    for index in range(opts.sequences):
        for _ in range(500):
            start, force = random_sequence(rng, opts.world, opts.iterations)
            if force and expected(opts.world, start, force)[1]:
                break
        else:
            sys.exit('FAIL: no random sequence needing reuse was found')
        proc = run_pool(opts, opts.world, start, force)
        problems, reuses = check_run(proc, want, opts.world, start, force)
        total += len(reuses)
        print(f'{"ok" if not problems else "FAIL"}: sequence {index} on {opts.world} processes, start {start}, '
              f'MALLEO_FORCE={force}: {len(reuses)} activations of processes that had left')
        if problems:
            failures.append(f'sequence {index} ({force}): ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))
    print(f'{opts.sequences} sequences, {total} activations of processes that had left')
    return failures


def parked_cpu(opts):
    """4 processes, 2 active: 2 and 3 join, all but 0 leave, 2 is taken back and leaves again, so the 3 parked
    processes all parked inside probe() after they had computed. Same method as check_parked_cpu.py."""
    window = 2.0
    program = os.path.realpath(opts.command[0])
    force = 'split@1:2,merge@2:2,split@3:1,merge@4:2'
    env = {'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': force, 'MALLEO_PCM_VERBOSE': 1}
    # Endless by design (1e9 iterations): the measurement ends it.
    cmd = pcm_launch.command(opts.mpi, 4, env, [program] + opts.command[1:] + ['--iterations', '1000000000'])
    proc = subprocess.Popen(cmd, env=pcm_launch.environment(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        # The last merge's line comes from the process that stays, after the leavers' last collective; the line of
        # world rank 2's activation comes from another process, so the two arrive in either order.
        merged = reused = False
        for line in proc.stderr:
            seen.append(line)
            merged = merged or line.startswith('malleo-pcm: merge at iteration 4:')
            reused = reused or bool(AGAIN.match(line))
            if merged and reused:
                break
        else:
            return ['parked cpu: the run ended before the last merge and an activation of a process that had '
                    'left\n' + ''.join(seen)]
        ranks = pcm_launch.processes_of(proc.pid, program)
        if len(ranks) != 4:
            return [f'parked cpu: found {len(ranks)} processes of {program}, expected 4']
        usage = pcm_launch.cpu_percent(ranks, window)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print('CPU % per rank: ' + ', '.join(f'{pid}: {pct:.2f}' for pct, pid in usage))
    parked, busy = usage[:3], usage[3]
    if any(pct >= 1.0 for pct, _ in parked):
        return [f'parked cpu: processes parked again used {[round(p, 2) for p, _ in parked]} % of a core '
                '(limit 1 %)']
    if busy[0] < 10.0:
        return [f'parked cpu: the active process used only {busy[0]:.1f} %: the measurement saw no computation']
    print('ok: 3 processes parked again after they left, each under 1 % of a core, while one computes')
    return []


def spawn(opts, want):
    """Spawn mode, 2 processes launched: the split after a merge takes back the process that left instead of
    spawning; the next split spawns one."""
    force = 'merge@3:1,split@6:1,split@9:1,merge@12:2,split@15:2'
    # Processes started while the program waits: the sequence's operations happen at the iterations it names.
    env = {'MALLEO_PCM_MODE': 'spawn', 'MALLEO_PCM_SPAWN': 'wait', 'MALLEO_FORCE': force, 'MALLEO_PCM_VERBOSE': 1}
    proc = pcm_launch.run(opts.mpi, 2, opts.command, env)
    problems, _ = check_run(proc, want, 3, 2, force)  # the spawned process is world rank 2, spare once spawned
    spawned = [int(w) for w in SPAWNED.findall(proc.stderr)]
    if spawned != [2]:
        problems.append(f'spawned world ranks {spawned}, expected [2] (one spawn, at iteration 9)')
    print(f'{"ok" if not problems else "FAIL"}: spawn mode, MALLEO_FORCE={force}: spawned {spawned}, '
          f'{len(AGAIN.findall(proc.stderr))} activations of processes that had left')
    return ['spawn mode: ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc)] if problems else []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--fixed', action='store_true')
    ap.add_argument('--sequences', type=int, default=0)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--world', type=int, default=3, help='processes launched for the random sequences')
    ap.add_argument('--iterations', type=int, default=30, help='the program\'s --iterations')
    ap.add_argument('--parked-cpu', action='store_true')
    ap.add_argument('--spawn', action='store_true')
    ap.add_argument('command', nargs=argparse.REMAINDER, help='the program and its arguments')
    opts = ap.parse_args()
    if not opts.command:
        ap.error('no program')
    if opts.parked_cpu:
        failures = parked_cpu(opts)
    else:
        opts.command = opts.command + ['--iterations', str(opts.iterations)]
        static = pcm_launch.run(opts.mpi, 1, opts.command)
        want = RESULT.findall(static.stdout)
        if static.returncode != 0 or not want:
            sys.exit('FAIL: static run\n' + pcm_launch.describe(static))
        failures = []
        if opts.fixed:
            failures += fixed(opts, want)
        if opts.sequences:
            failures += sequences(opts, want)
        if opts.spawn:
            failures += spawn(opts, want)
    if failures:
        print('\n'.join(failures), file=sys.stderr)
        sys.exit(f'FAIL: {len(failures)} problems')
    print('ok')


if __name__ == '__main__':
    main()
