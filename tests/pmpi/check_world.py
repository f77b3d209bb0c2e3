#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""MPI_COMM_WORLD substitution (world.c, world.F90) with libmalleo_pmpi preloaded on 4 ranks: every rank prints
"world ok", and for the C program the report's point-to-point matrix holds the ring over the substituted world
in real world ranks (sub rank i is world rank 3 - i; world rank 0 took no part), ROUNDS x BYTES per pair. The
same holds with MALLEO_PROFILE=off, which then writes no report."""

import argparse
import glob
import json
import tempfile

import pmpi_launch

RANKS = 4
ROUNDS, BYTES = 5, 1000  # as in world.c


def expected_matrix():
    n = RANKS - 1
    world = lambda sub: RANKS - 1 - sub  # noqa: E731
    m = [[0] * RANKS for _ in range(RANKS)]
    for i in range(n):
        m[world(i)][world((i + 1) % n)] = ROUNDS * BYTES
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--no-report', action='store_true', help='check the output only (the Fortran program)')
    ap.add_argument('program')
    opts = ap.parse_args()
    errors = []
    with tempfile.TemporaryDirectory(prefix='malleo-world-') as out:
        proc = pmpi_launch.run(opts.mpi, RANKS, [opts.program], preload=opts.lib, profile_dir=out)
        ok = sorted(int(line.split()[-1]) for line in proc.stdout.splitlines() if line.startswith('world ok'))
        if proc.returncode != 0 or ok != list(range(RANKS)):
            errors.append(f'status {proc.returncode}, "world ok" from ranks {ok}:\n{proc.stdout}\n{proc.stderr[-2000:]}')
        if not opts.no_report:
            reports = glob.glob(f'{out}/malleo-profile-*.json')
            if len(reports) != 1:
                errors.append(f'expected one report, found {reports}')
            else:
                matrix = json.load(open(reports[0], encoding='utf-8')).get('matrix_bytes')
                if matrix != expected_matrix():
                    errors.append(f'matrix_bytes {matrix}, expected {expected_matrix()}')
    # MALLEO_PROFILE=off: the wrappers leave their direct path once a world is set, and still write no report.
    with tempfile.TemporaryDirectory(prefix='malleo-world-') as out:
        proc = pmpi_launch.run(opts.mpi, RANKS, [opts.program], preload=opts.lib, profile_dir=out, mode='off')
        ok = sorted(int(line.split()[-1]) for line in proc.stdout.splitlines() if line.startswith('world ok'))
        if proc.returncode != 0 or ok != list(range(RANKS)):
            errors.append(f'MALLEO_PROFILE=off: status {proc.returncode}, "world ok" from ranks {ok}:\n'
                          f'{proc.stdout}\n{proc.stderr[-2000:]}')
        if glob.glob(f'{out}/malleo-profile-*'):
            errors.append('MALLEO_PROFILE=off wrote a report')
    pmpi_launch.verdict(errors, f'world substitution under {opts.mpi}',
                        f'MPI_COMM_WORLD substituted on ranks 1-{RANKS - 1} under {opts.mpi}, matrix in world ranks')


if __name__ == '__main__':
    main()
