#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""heat2d in pool mode after random seeded sequences of split, merge and migrate: every run must print the
checksum of the static run, every operation must have happened (MALLEO_PCM_VERBOSE lines) and the final size must
be the one the sequence leads to. The sequences, taken together, go down to 1 process and up to more processes
than the machine has cores.

With --kept, the coordinator's phase records (MALLEO_PCM_PHASES) must also show that it did not copy what it kept:
every split's kept_in_place is not 0 (the coordinator keeps the start of its block in its buffer), and with
--kept pages (the C++ API, whose session owns the buffers) every merge either grew the coordinator's block in place,
into the room a split left in it, or moved its old block into a new buffer by pages (needs blocks of a few MiB and
an MPI whose memory hooks leave mremap alone, Open MPI). Which one is known from the sizes: the block keeps the size
it was allocated with at n processes until a merge needs more, which with blocks of hundreds of elements is a merge
to fewer than n processes; a migration gives the coordinator's slot a new process, allocated at the current size.

With --kept shared (MALLEO_PCM_SHARED_PAGES=on: the C++ API's rod or heat2d's grid, rows x columns doubles), every
operation's records must show that the executor delivered (copied or sent) nothing of the data but the ends of each
transfer: at each end a page, or an element reaching into the next one, and a schedule of `before` and `after`
processes has fewer than before + after transfers; the rest was kept in place or taken over by its pages
(taken_as_pages, not 0, but for heat2d's migrations, whose columns travel through PCM_Store)."""

import argparse
import json
import os
import random
import tempfile

import pcm_launch


def sequence(rng, world, iterations):
    """A feasible random schedule: (MALLEO_FORCE text, list of (op, count), start size, final size, sizes seen)."""
    active = rng.randint(1, 3)
    start = active
    spare = world - active  # processes that never ran: a process that left is not activated again
    entries, ops, sizes = [], [], [active]
    at = rng.randint(1, 4)
    while at < iterations - 2 and len(ops) < 5:
        choices = []
        if spare:
            choices += ['split', 'migrate']
        if active > 1:
            choices += ['merge', 'merge']
        if not choices:
            break
        op = rng.choice(choices)
        if op == 'split':
            count = rng.randint(1, spare)
            active, spare = active + count, spare - count
        elif op == 'merge':
            count = rng.randint(1, active - 1)
            active -= count
        else:
            count = rng.randint(1, min(active, spare))
            spare -= count
        entries.append(f'{op}@{at}:{count}')
        ops.append((op, count))
        sizes.append(active)
        at += rng.randint(1, 5)
    return ','.join(entries), ops, start, active, sizes


def check_run(proc, want, final, ops):
    """What is wrong with a run of a sequence: exit code, checksum, final size, operations done."""
    done = pcm_launch.completed_operations(proc)
    problems = []
    if proc.returncode != 0:
        problems.append(f'exit code {proc.returncode}')
    if pcm_launch.checksum(proc) != want:
        problems.append(f'checksum {pcm_launch.checksum(proc)} != static {want}')
    if pcm_launch.final_processes(proc) != final:
        problems.append(f'final size {pcm_launch.final_processes(proc)} != {final}')
    if [(op, ) for op, *_ in done] != [(op, ) for op, _ in ops]:
        problems.append(f'operations done {done} != asked {ops}')
    if 'failed' in proc.stderr:
        problems.append('an operation failed')
    return problems


def shared_problems(records, rod_bytes, element_bytes=8):
    """Operations that copied more of the rod than the ends of their transfers, or took none of it over (--kept
    shared). At each end of a transfer a page, or an element that reaches into the next, is copied; the counter
    buffer (a few KiB, not shared) is copied too: up to 1 % of the rod is allowed for it."""
    problems = []
    for record in records:
        at = f'{record["operation"]} at {record["iteration"]}'
        edges = 2 * (4096 + element_bytes) * (record['before'] + record['after']) + rod_bytes // 100
        if record['delivered'] > edges:
            problems.append(f'{at}: {record["delivered"]} bytes delivered by the executor, more than {edges}')
        # A migration of the C API moves its columns through PCM_Store and PCM_Load, outside the redistribution.
        if record['operation'] != 'migrate' and not 0 < record['taken_as_pages'] <= rod_bytes:
            problems.append(f'{at}: {record["taken_as_pages"]} bytes taken over as pages, not in (0, {rod_bytes}]')
    return problems


def kept_problems(records, kept, start):
    """(What the coordinator copied that it should have kept (--kept), merges that grew in place); `start`: processes
    active at first."""
    problems, grown = [], 0
    allocated_at = start  # processes when the coordinator's block was allocated
    for record in records:
        op, at = record['operation'], record['iteration']
        if op == 'split' and record['kept_in_place'] <= 0:
            problems.append(f'split at {at}: nothing kept in place')
        if op == 'merge' and kept == 'pages':
            if record['after'] >= allocated_at:
                grown += 1
                if record['kept_in_place'] <= 0 or record['moved_as_pages'] != 0:
                    problems.append(f'merge at {at} to {record["after"]}: not grown in place in a block '
                                    f'allocated for {allocated_at} processes ({record})')
            else:
                if record['moved_as_pages'] <= 0:
                    problems.append(f'merge at {at}: no page moved')
                allocated_at = record['after']
        if op == 'migrate':
            allocated_at = record['after']
    return problems, grown


def sequence_parser(doc, mpi_default=None):
    """The options of a check by random sequences: the MPI, how many sequences, their seed, the pool's size."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument('--mpi', required=mpi_default is None, default=mpi_default)
    ap.add_argument('--sequences', type=int, required=True)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--world', type=int, default=6, help='processes launched (the pool)')
    return ap


def chosen_sequences(opts, draw, attempts=100):
    """(index, (force, ops, start, final, sizes)) for each of opts.sequences sequences drawn by draw(rng) from
    opts.seed, each with an operation; the first two make sure the set reaches 1 process and more processes than
    cores."""
    rng = random.Random(opts.seed)
    for index in range(opts.sequences):
        for _ in range(attempts):
            drawn = draw(rng)
            sizes = drawn[4]
            if index == 0 and min(sizes) != 1 or index == 1 and max(sizes) <= os.cpu_count():
                continue
            if drawn[1]:
                break
        yield index, drawn


def judge(failures, index, start, force, sizes, problems, proc):
    """Says how a sequence went; its problems and the run's output join `failures`."""
    print(f'{"ok" if not problems else "FAIL"}: sequence {index} start {start} MALLEO_FORCE={force} sizes {sizes}')
    if problems:
        failures.append(f'sequence {index} ({force}): ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))


def check_sizes_seen(failures, seen):
    """The sequences together must have reached 1 process and more processes than cores."""
    if 1 not in seen or max(seen) <= os.cpu_count():
        failures.append(f'the sequences saw sizes {sorted(seen)}: need 1 and more than {os.cpu_count()}')


def main():
    ap = sequence_parser(__doc__)
    ap.add_argument('--rows', type=int, default=24)
    ap.add_argument('--columns', type=int, default=30)
    ap.add_argument('--iterations', type=int, default=30)
    ap.add_argument('--kept', choices=['in-place', 'pages', 'shared'],
                    help='check what the coordinator kept without copying, or (shared) what was taken over as pages')
    ap.add_argument('--env', action='append', default=[], metavar='KEY=VALUE',
                    help='more environment for the runs of the sequences (repeatable)')
    ap.add_argument('program')
    opts = ap.parse_args()
    grid = ['--rows', str(opts.rows), '--columns', str(opts.columns), '--iterations', str(opts.iterations)]

    want = pcm_launch.static_checksum(opts.mpi, [opts.program] + grid)

    failures, seen, grown_merges = [], set(), 0
    for index, (force, ops, start, final, sizes) in chosen_sequences(
            opts, lambda rng: sequence(rng, opts.world, opts.iterations)):
        seen.update(sizes)
        env = dict(pair.split('=', 1) for pair in opts.env)
        env.update({'MALLEO_POOL_ACTIVE': start, 'MALLEO_FORCE': force, 'MALLEO_PCM_VERBOSE': 1})
        with tempfile.TemporaryDirectory() as tmp:
            phases = os.path.join(tmp, 'phases.jsonl')
            if opts.kept:
                env['MALLEO_PCM_PHASES'] = phases
            proc = pcm_launch.run(opts.mpi, opts.world, [opts.program] + grid, env)
            problems = check_run(proc, want, final, ops)
            if opts.kept:
                with open(phases, encoding='utf-8') as f:
                    records = [json.loads(line) for line in f]
                if opts.kept == 'shared':
                    # heat2d's elements are columns of `rows` doubles; heat1d_cpp's single doubles.
                    problems += shared_problems(records, opts.rows * opts.columns * 8, opts.rows * 8)
                else:
                    more, grown = kept_problems(records, opts.kept, start)
                    problems += more
                    grown_merges += grown
                if len(records) != len(ops):
                    problems.append(f'{len(records)} phase records for {len(ops)} operations')
        judge(failures, index, start, force, sizes, problems, proc)
    check_sizes_seen(failures, seen)
    if opts.kept == 'pages' and not grown_merges:
        failures.append('--kept pages: no merge of the sequences could grow in place, so that was not checked')
    pcm_launch.verdict(failures, f'{len(failures)} of {opts.sequences} sequences',
                       f'{opts.sequences} sequences under {opts.mpi} gave the static checksum {want}')


if __name__ == '__main__':
    main()
