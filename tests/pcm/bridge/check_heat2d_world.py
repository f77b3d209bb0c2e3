#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The malleable MPI_COMM_WORLD end to end (docs/pcm-api.md, MALLEO_WORLD=malleable): heat2d --world mpi computes
on MPI_COMM_WORLD (ghost exchange, gather, ranks, sizes) under random seeded pool-mode sequences of split, merge and
migrate, with libmalleo_pmpi preloaded into the ranks; every run must print the static run's checksum, carry out
every operation and end at the size the sequence leads to. Then the same opt-in without the preload: the bridge
says once that MPI_COMM_WORLD stays the launch's world, and heat2d, finding it is not the active processes'
communicator, stops on every process with one line and exit code 2, printing no checksum."""

import os
import re
import tempfile

import check_heat2d_sequences
import pcm_launch

NOT_PRELOADED = ("malleo-pcm: MALLEO_WORLD=malleable but libmalleo_pmpi is not preloaded: MPI_COMM_WORLD stays "
                 "the launch's world")


def main():
    ap = check_heat2d_sequences.sequence_parser(__doc__)
    ap.add_argument('--lib', required=True, help="the build tree's libmalleo_pmpi_<mpi>.so")
    ap.add_argument('program')
    opts = ap.parse_args()
    iterations = 30
    grid = ['--rows', '24', '--columns', '30', '--iterations', str(iterations)]

    want = pcm_launch.static_checksum(opts.mpi, [opts.program] + grid)

    failures, seen = [], set()
    with tempfile.TemporaryDirectory(prefix='malleo-heat2d-world-') as reports:
        for index, (force, ops, start, final, sizes) in check_heat2d_sequences.chosen_sequences(
                opts, lambda rng: check_heat2d_sequences.sequence(rng, opts.world, iterations)):
            seen.update(sizes)
            # The preload for the ranks only (pcm_launch passes these with -x / -genv); the profiler's reports go
            # to a directory of the test's own.
            env = {'MALLEO_POOL_ACTIVE': start, 'MALLEO_FORCE': force, 'MALLEO_PCM_VERBOSE': 1,
                   'MALLEO_WORLD': 'malleable', 'LD_PRELOAD': os.path.abspath(opts.lib),
                   'MALLEO_PROFILE_DIR': reports}
            proc = pcm_launch.run(opts.mpi, opts.world, [opts.program] + grid + ['--world', 'mpi'], env)
            problems = check_heat2d_sequences.check_run(proc, want, final, ops)
            if 'MALLEO_WORLD' in proc.stderr or 'heat2d: --world' in proc.stderr:
                problems.append('the malleable world was not in place')
            print(f'{"ok" if not problems else "FAIL"}: sequence {index} start {start} MALLEO_FORCE={force} '
                  f'sizes {sizes}')
            if problems:
                failures.append(f'sequence {index} ({force}): ' + '; '.join(problems) + '\n' +
                                pcm_launch.describe(proc))
    if opts.sequences and (1 not in seen or max(seen) <= os.cpu_count()):
        failures.append(f'the sequences saw sizes {sorted(seen)}: need 1 and more than {os.cpu_count()}')

    # Opted in without the preload: MPI_COMM_WORLD is the launch's 4 processes while 2 are active.
    env = {'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': 'split@3:1', 'MALLEO_WORLD': 'malleable'}
    proc = pcm_launch.run(opts.mpi, 4, [opts.program] + grid + ['--world', 'mpi'], env)
    problems = []
    if proc.returncode == 0:
        problems.append('exit code 0')
    if pcm_launch.checksum(proc) is not None:
        problems.append(f'printed a checksum ({pcm_launch.checksum(proc)})')
    warnings = re.findall(r'^malleo-pcm: MALLEO_WORLD=.*$', proc.stderr, re.M)
    if warnings != [NOT_PRELOADED]:
        problems.append(f'bridge lines {warnings}, expected once: {NOT_PRELOADED}')
    stops = re.findall(r'^heat2d: .*$', proc.stderr, re.M)
    expected = ('heat2d: --world mpi: MPI_COMM_WORLD (4 processes) is not the 2 active processes; needs '
                'MALLEO_WORLD=malleable and libmalleo_pmpi preloaded')
    if stops != [expected]:
        problems.append(f'heat2d lines {stops}, expected once: {expected}')
    print(f'{"ok" if not problems else "FAIL"}: without the preload the bridge warns and heat2d stops')
    if problems:
        failures.append('without the preload: ' + '; '.join(problems) + '\n' + pcm_launch.describe(proc))

    pcm_launch.verdict(failures, f'{len(failures)} problems',
                       f'{opts.sequences} sequences with --world mpi and the malleable world under {opts.mpi} gave the '
                       f'static checksum {want}')


if __name__ == '__main__':
    main()
