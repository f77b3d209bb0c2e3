#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""threads.c under MPI_THREAD_MULTIPLE: the report sums every thread's counters exactly (see threads.c)."""

import argparse
import glob
import json
import sys
import tempfile

import pmpi_launch

THREADS = 3


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--ranks', type=int, default=2)
    ap.add_argument('--rounds', type=int, default=50)
    ap.add_argument('program')
    opts = ap.parse_args()
    n, rounds = opts.ranks, opts.rounds
    errors = []
    with tempfile.TemporaryDirectory(prefix='malleo-pmpi-') as out:
        proc = pmpi_launch.run(opts.mpi, n, [opts.program, str(rounds)], opts.lib, out)
        if 'MPI_THREAD_MULTIPLE not provided' in proc.stderr:
            print(f'SKIP: {opts.mpi} does not provide MPI_THREAD_MULTIPLE', file=sys.stderr)
            sys.exit(pmpi_launch.SKIP)
        found = glob.glob(f'{out}/malleo-profile-*.json')
        if proc.returncode != 0 or len(found) != 1:
            sys.exit(f'FAIL: rc {proc.returncode}, reports {found}\n{proc.stdout}\n{proc.stderr}')
        report = json.load(open(found[0], encoding='utf-8'))
    per_peer_bytes = rounds * sum((t + 1) * 8 for t in range(THREADS))
    for rank in report['ranks']:
        r = rank['rank']
        fns = rank['functions']
        for fn, calls, nbytes in (('MPI_Send', rounds * THREADS * (n - 1), per_peer_bytes * (n - 1)),
                                  ('MPI_Irecv', rounds * THREADS * (n - 1), 0),
                                  ('MPI_Comm_dup', THREADS, 0), ('MPI_Comm_free', THREADS, 0)):
            got = fns.get(fn, {'calls': 0, 'bytes': 0})
            if (got['calls'], got['bytes']) != (calls, nbytes):
                errors.append(f'rank {r} {fn}: got {got["calls"]} calls {got["bytes"]} bytes, '
                              f'expected {calls} and {nbytes}')
        if fns.get('MPI_Wait', {}).get('calls') != rounds * THREADS * (n - 1):
            errors.append(f'rank {r} MPI_Wait calls: {fns.get("MPI_Wait")}')
        want = [0 if p == r else per_peer_bytes for p in range(n)]
        if report['matrix_bytes'][r] != want:
            errors.append(f'matrix row {r}: {report["matrix_bytes"][r]} != {want}')
        if rank['threads'] < THREADS:
            errors.append(f'rank {r}: counters of {rank["threads"]} threads, expected at least {THREADS}')
    pmpi_launch.verdict(errors, f'{len(errors)} mismatches under {opts.mpi}',
                        f'{n} ranks x {THREADS} threads under {opts.mpi}: exact totals')


if __name__ == '__main__':
    main()
