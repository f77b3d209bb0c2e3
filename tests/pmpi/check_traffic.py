#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run a known-traffic program (traffic.c or traffic.F90) with libmalleo_pmpi preloaded and check that the JSON
report holds exactly the calls, bytes, matrix and histograms the program produces. The expected values are computed
here from the world size and the number of rounds, following the phases described in traffic.c."""

import argparse
import glob
import json
import sys
import tempfile
from collections import Counter, defaultdict

import pmpi_launch

INT, DOUBLE, CHAR = 4, 8, 1


def elements(src, dst, k):
    return 1 + 7 * src + 3 * dst + k


def size_bin(n):
    return 0 if n == 0 else n.bit_length()


def expected(n, rounds, lang):
    """Per rank: ({function: (calls, bytes)}, {peer: (messages, bytes)}, Counter(p2p size bin), {coll kind: (calls,
    bytes)})."""
    ranks = []
    for r in range(n):
        calls, fbytes = Counter(), Counter()
        peers = defaultdict(lambda: [0, 0])
        bins = Counter()

        def send(fn, peer, nbytes):
            fbytes[fn] += nbytes
            peers[peer][0] += 1
            peers[peer][1] += nbytes
            bins[size_bin(nbytes)] += 1

        calls['MPI_Comm_rank'] += 1
        calls['MPI_Comm_size'] += 1
        # A: world, blocking
        for k in range(rounds):
            for p in range(n):
                if p != r:
                    calls['MPI_Send'] += 1
                    calls['MPI_Recv'] += 1
                    send('MPI_Send', p, INT * elements(r, p, k))
        # B: split by parity, nonblocking; ranks are translated back to the world
        same = [p for p in range(n) if p % 2 == r % 2 and p != r]
        calls['MPI_Comm_split'] += 1
        calls['MPI_Comm_rank'] += 1
        calls['MPI_Comm_size'] += 1
        calls['MPI_Comm_group'] += 2
        for k in range(rounds):
            for p in same:
                calls['MPI_Group_translate_ranks'] += 1
                calls['MPI_Irecv'] += 1
                calls['MPI_Isend'] += 1
                send('MPI_Isend', p, DOUBLE * (elements(r, p, k) % 9))
            calls['MPI_Waitall'] += 1
        calls['MPI_Group_free'] += 2
        calls['MPI_Comm_free'] += 1
        # C: ring on a duplicate
        calls['MPI_Comm_dup'] += 1
        nxt = (r + 1) % n
        for k in range(rounds):
            calls['MPI_Sendrecv'] += 1
            send('MPI_Sendrecv', nxt, CHAR * elements(r, nxt, k))
        # D: persistent, bytes attributed to MPI_Send_init at each start
        calls['MPI_Recv_init'] += 1
        calls['MPI_Send_init'] += 1
        for k in range(rounds):
            calls['MPI_Startall'] += 1
            calls['MPI_Waitall'] += 1
            send('MPI_Send_init', nxt, INT * 5)
        calls['MPI_Request_free'] += 2
        calls['MPI_Comm_free'] += 1
        # E: collectives
        coll = {}
        calls['MPI_Bcast'] += rounds
        fbytes['MPI_Bcast'] += rounds * 100 * INT if r == 0 else 0
        calls['MPI_Allreduce'] += rounds
        fbytes['MPI_Allreduce'] += rounds * 16 * DOUBLE
        calls['MPI_Barrier'] += 1
        calls['MPI_Gather'] += 1
        fbytes['MPI_Gather'] += 3 * INT
        calls['MPI_Alltoall'] += 1
        fbytes['MPI_Alltoall'] += 2 * INT * n
        calls['MPI_Ibcast'] += 1
        fbytes['MPI_Ibcast'] += 10 * CHAR if r == n - 1 else 0
        calls['MPI_Wait'] += 2
        calls['MPI_Iallreduce'] += 1
        fbytes['MPI_Iallreduce'] += 4 * INT
        coll['bcast'] = (rounds + 1, fbytes['MPI_Bcast'] + fbytes['MPI_Ibcast'])
        coll['allreduce'] = (rounds + 1, fbytes['MPI_Allreduce'] + fbytes['MPI_Iallreduce'])
        coll['barrier'] = (1, 0)
        coll['gather'] = (1, fbytes['MPI_Gather'])
        coll['alltoall'] = (1, fbytes['MPI_Alltoall'])
        # F: MPI_PROC_NULL: a call, no message
        calls['MPI_Send'] += 1
        functions = {fn: (calls[fn], fbytes[fn]) for fn in calls}
        ranks.append((functions, {p: tuple(v) for p, v in peers.items()}, bins, coll))
    return ranks


def check_report(report, n, rounds, lang, markers):
    errors = []

    def expect(what, got, want):
        if got != want:
            errors.append(f'{what}: got {got}, expected {want}')

    expect('world_size', report['world_size'], n)
    expect('complete', report['complete'], True)
    expect('number of ranks', len(report['ranks']), n)
    for r, (functions, peers, bins, coll) in enumerate(expected(n, rounds, lang)):
        rank = next(x for x in report['ranks'] if x['rank'] == r)
        got = rank['functions']
        for fn, (calls, nbytes) in functions.items():
            entry = got.get(fn, {'calls': 0, 'bytes': 0})
            expect(f'rank {r} {fn} calls', entry['calls'], calls)
            expect(f'rank {r} {fn} bytes', entry['bytes'], nbytes)
        extra = set(got) - set(functions) - {'MPI_Init', 'MPI_Init_thread'}
        expect(f'rank {r} unexpected functions', sorted(extra), [])
        to = {x['peer']: (x['messages'], x['bytes']) for x in rank['p2p_sent']['to']}
        expect(f'rank {r} messages per peer', to, peers)
        expect(f'rank {r} outside world', rank['p2p_sent']['outside_world'], {'messages': 0, 'bytes': 0})
        row_m = [peers.get(p, (0, 0))[0] for p in range(n)]
        row_b = [peers.get(p, (0, 0))[1] for p in range(n)]
        expect(f'matrix_messages row {r}', report['matrix_messages'][r], row_m)
        expect(f'matrix_bytes row {r}', report['matrix_bytes'][r], row_b)
        hist = {b['bin']: b['count'] for b in rank['size_histograms']['p2p']}
        expect(f'rank {r} p2p size histogram', hist, dict(bins))
        got_coll = {k: (v['calls'], v['bytes']) for k, v in rank['collectives'].items()}
        expect(f'rank {r} collectives', got_coll, coll)
        if rank['mpi_time_s'] > rank['wall_time_s']:
            errors.append(f'rank {r}: time in MPI {rank["mpi_time_s"]} exceeds wall time {rank["wall_time_s"]}')
        iterations = rank['iterations']
        if markers:
            expect(f'rank {r} iterations', iterations['count'], rounds)
            expect(f'rank {r} iteration times', len(iterations['time_s']), rounds)
        else:
            expect(f'rank {r} iterations', iterations, {'count': 0, 'note': 'no iteration markers'})
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True, choices=sorted(pmpi_launch.LAUNCHERS))
    ap.add_argument('--lib', required=True)
    ap.add_argument('--ranks', type=int, default=3)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--lang', choices=['c', 'fortran'], default='c')
    ap.add_argument('--no-markers', action='store_true', help='the program does not mark iterations')
    ap.add_argument('program')
    opts = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix='malleo-pmpi-') as out:
        proc = pmpi_launch.run(opts.mpi, opts.ranks, [opts.program, str(opts.rounds)], preload=opts.lib,
                               profile_dir=out)
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, sep='\n', file=sys.stderr)
            sys.exit(f'FAIL: {opts.program} exited with {proc.returncode}')
        reports = glob.glob(f'{out}/malleo-profile-*.json')
        if len(reports) != 1:
            print(proc.stderr, file=sys.stderr)
            sys.exit(f'FAIL: expected one report in {out}, found {reports}')
        report = json.load(open(reports[0], encoding='utf-8'))
        errors = check_report(report, opts.ranks, opts.rounds, opts.lang, not opts.no_markers)
        summary = open(reports[0][:-len('.json')] + '.txt', encoding='utf-8').read()
        for heading in ('Time in MPI by function', 'Message sizes, p2p', 'Point-to-point bytes sent',
                        'Iteration times'):
            if heading not in summary:
                errors.append(f'summary lacks "{heading}"')
    pmpi_launch.verdict(errors, f'{len(errors)} mismatches ({opts.mpi}, {opts.lang}, {opts.ranks} ranks)',
                        f'{opts.program} on {opts.ranks} ranks under {opts.mpi}: report matches the known traffic')


if __name__ == '__main__':
    main()
