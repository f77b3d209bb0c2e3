#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""MALLEO_PROFILE=off writes nothing; summary writes a report without the per-peer matrix but with exact call
counts; a job that ends without MPI_Finalize (exit from main, MPI_Abort) leaves per-rank partial reports."""

import argparse
import glob
import json
import tempfile

import check_traffic
import pmpi_launch


def reports(directory):
    return sorted(glob.glob(f'{directory}/malleo-profile-*.json'))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--traffic', required=True)
    ap.add_argument('--early-exit', required=True)
    opts = ap.parse_args()
    errors = []
    ranks, rounds = 2, 2

    with tempfile.TemporaryDirectory(prefix='malleo-pmpi-') as out:
        proc = pmpi_launch.run(opts.mpi, ranks, [opts.traffic, str(rounds)], opts.lib, out, mode='off')
        if proc.returncode != 0 or 'rounds done' not in proc.stdout:
            errors.append(f'off: program failed ({proc.returncode}): {proc.stderr}')
        if reports(out) or 'malleo-pmpi' in proc.stderr:
            errors.append(f'off: a report was written: {reports(out)} {proc.stderr}')

    with tempfile.TemporaryDirectory(prefix='malleo-pmpi-') as out:
        proc = pmpi_launch.run(opts.mpi, ranks, [opts.traffic, str(rounds)], opts.lib, out, mode='summary')
        found = reports(out)
        if proc.returncode != 0 or len(found) != 1:
            errors.append(f'summary: rc {proc.returncode}, reports {found}: {proc.stderr}')
        else:
            report = json.load(open(found[0], encoding='utf-8'))
            if report['mode'] != 'summary' or 'matrix_bytes' in report or 'p2p_sent' in report['ranks'][0]:
                errors.append('summary: the report has per-peer data or the wrong mode')
            for r, (functions, _, bins, coll) in enumerate(check_traffic.expected(ranks, rounds, 'c')):
                rank = next(x for x in report['ranks'] if x['rank'] == r)
                got = {fn: (v['calls'], v['bytes']) for fn, v in rank['functions'].items() if fn != 'MPI_Init'}
                if got != functions:
                    errors.append(f'summary: rank {r} functions {got} != {functions}')
                hist = {b['bin']: b['count'] for b in rank['size_histograms']['p2p']}
                if hist != dict(bins):
                    errors.append(f'summary: rank {r} histogram {hist} != {dict(bins)}')

    # Which ranks get to write depends on the launcher: once one rank has exited without MPI_Finalize, MPICH's
    # hydra kills the others, sometimes before their exit handlers run. So: at least one rank, each report
    # marked incomplete with the right ending; after MPI_Abort, rank 0 (the caller) alone.
    for how, ended in (('exit', 'exit without MPI_Finalize'), ('abort', 'MPI_Abort')):
        with tempfile.TemporaryDirectory(prefix='malleo-pmpi-') as out:
            proc = pmpi_launch.run(opts.mpi, ranks, [opts.early_exit, how], opts.lib, out)
            found = reports(out)
            suffixes = {f[f.rindex('.rank'):] for f in found if '.rank' in f}
            allowed = {f'.rank{r}.json' for r in range(ranks)} if how == 'exit' else {'.rank0.json'}
            if len(suffixes) != len(found) or not suffixes <= allowed or (how == 'abort' and not suffixes):
                errors.append(f'{how}: expected per-rank reports among {sorted(allowed)}, found {found}: '
                              f'{proc.stderr[-2000:]}')
                continue
            if not found:
                errors.append(f'{how}: no rank wrote a report: {proc.stderr[-2000:]}')
            for f in found:
                report = json.load(open(f, encoding='utf-8'))
                rank = report['ranks'][0]
                if report['complete'] or report['ended'] != ended:
                    errors.append(f'{how}: {f} says complete={report["complete"]}, ended={report["ended"]}')
                if rank['functions'].get('MPI_Sendrecv', {}).get('calls') != 1:
                    errors.append(f'{how}: {f} lacks the one MPI_Sendrecv')
    pmpi_launch.verdict(errors, f'{len(errors)} problems ({opts.mpi})',
                        f'off, summary, exit without MPI_Finalize and MPI_Abort behave under {opts.mpi}')


if __name__ == '__main__':
    main()
