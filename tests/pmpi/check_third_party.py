#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An unmodified third-party MPI program from Debian, HPC Challenge (`hpcc`, package hpcc), run on 2 ranks plain and
unmodified under `malleo run` (libmalleo_pmpi preloaded into the ranks): its verification results must be the same (timings and rates are blanked out:
they differ between any two runs) and the report must be plausible: complete, a nonzero matrix in both
directions, time in MPI below wall time on every rank.

Debian's hpcc is linked against Open MPI only; under any other MPI the test is skipped, as it is when hpcc is not
installed."""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pmpi_launch

PROGRAM = 'hpcc'
RANKS = 2
# hpcc reads hpccinf.txt from the current directory: the example shipped with the package, shrunk to run in ~2 s.
EXAMPLE_INPUT = '/usr/share/doc/hpcc/examples/_hpccinf.txt'
SHRINK = [(r'^1000(\s+)Ns', r'200\1Ns'), (r'^80(\s+)NBs', r'32\1NBs'), (r'^2(\s+)Ps', r'1\1Ps')]
VERDICT = re.compile(r'pass|fail|error|residual', re.IGNORECASE)
NUMBER = re.compile(r'\d+\.\d+(e[+-]?\d+)?', re.IGNORECASE)


def skip(why):
    print(f'SKIP: {why}', file=sys.stderr)
    sys.exit(pmpi_launch.SKIP)


def linked_mpi(path):
    libs = subprocess.run(['ldd', path], capture_output=True, text=True).stdout
    if 'libmpi.so.40' in libs:
        return 'openmpi'
    if 'libmpich.so' in libs:
        return 'mpich'
    return None


def run_hpcc(mpi, workdir, malleo=None, profile_dir=None):
    """hpcc on RANKS ranks in workdir: plain, or through `malleo run` when malleo is given."""
    with open(EXAMPLE_INPUT, encoding='utf-8') as f:
        text = f.read()
    for pattern, repl in SHRINK:
        text = re.sub(pattern, repl, text, flags=re.MULTILINE)
    with open(os.path.join(workdir, 'hpccinf.txt'), 'w', encoding='utf-8') as f:
        f.write(text)
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        if malleo:
            env = pmpi_launch.launcher_env(True)
            env['MALLEO_AGENT'] = ''
            proc = subprocess.run([malleo, 'run', '-n', str(RANKS), '--mpi', mpi, '--profile-dir', profile_dir,
                                   '--', shutil.which(PROGRAM)], env=env, capture_output=True, text=True,
                                  timeout=50, stdin=subprocess.DEVNULL)
        else:
            proc = pmpi_launch.run(mpi, RANKS, [shutil.which(PROGRAM)])
    finally:
        os.chdir(cwd)
    how = 'under malleo run' if malleo else 'plain'
    if proc.returncode != 0:
        sys.exit(f'FAIL: hpcc exited with {proc.returncode} ({how}):\n{proc.stdout}\n{proc.stderr}')
    with open(os.path.join(workdir, 'hpccoutf.txt'), encoding='utf-8', errors='replace') as f:
        out = f.read()
    # PTRANS prints a 'CPU ... PASSED' line next to each 'WALL' one only when the process's CPU timer advanced during
    # that test (tens of microseconds at this size): present or not from run to run, plain or profiled, it is timing.
    verdicts = [' '.join(NUMBER.sub('#', line).split()) for line in out.splitlines()
                if VERDICT.search(line) and not line.startswith('CPU ')]
    summary_keys = [line.split('=')[0] for line in out.split('Begin of Summary section.')[-1].splitlines()
                    if '=' in line]
    return proc.stdout, verdicts, summary_keys


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--malleo', required=True)
    opts = ap.parse_args()
    opts.malleo = os.path.abspath(opts.malleo)  # hpcc runs in its own directory
    path = shutil.which(PROGRAM)
    if not path or not os.path.exists(EXAMPLE_INPUT):
        skip(f'{PROGRAM} is not installed (Debian package hpcc)')
    if linked_mpi(path) != opts.mpi:
        skip(f'{path} is built against {linked_mpi(path)}, not {opts.mpi}; Debian 12 has no {opts.mpi} build')

    errors = []
    with tempfile.TemporaryDirectory(prefix='malleo-hpcc-') as plain, \
            tempfile.TemporaryDirectory(prefix='malleo-hpcc-') as profiled, \
            tempfile.TemporaryDirectory(prefix='malleo-pmpi-') as reports_dir:
        base = run_hpcc(opts.mpi, plain)
        with_lib = run_hpcc(opts.mpi, profiled, malleo=opts.malleo, profile_dir=reports_dir)
        for what, a, b in zip(['stdout', 'verification lines', 'summary keys'], base, with_lib):
            if a != b:
                errors.append(f'{what} differ under malleo run:\n  without: {a}\n  with:    {b}')
        if not base[1]:
            errors.append('hpcc printed no verification lines: the comparison would be empty')
        reports = glob.glob(f'{reports_dir}/malleo-profile-*.json')
        if len(reports) != 1:
            errors.append(f'expected one report, found {reports}')
        else:
            report = json.load(open(reports[0], encoding='utf-8'))
            if not report['complete'] or report['world_size'] != RANKS or report['app'] != PROGRAM:
                errors.append(f'report header: complete {report["complete"]}, world_size {report["world_size"]}, '
                              f'app {report["app"]}')
            matrix = report.get('matrix_bytes', [])
            if len(matrix) != RANKS or not matrix[0][1] or not matrix[1][0]:
                errors.append(f'point-to-point matrix not nonzero in both directions: {matrix}')
            for rank in report['ranks']:
                if not 0 < rank['mpi_time_s'] < rank['wall_time_s']:
                    errors.append(f'rank {rank["rank"]}: time in MPI {rank["mpi_time_s"]} s, wall '
                                  f'{rank["wall_time_s"]} s')
                if not rank['collectives']:
                    errors.append(f'rank {rank["rank"]}: no collectives recorded')
    pmpi_launch.verdict(errors, f'{PROGRAM} under {opts.mpi}',
                        f'{PROGRAM} on {RANKS} ranks gives the same verification results with the preload; report: '
                        f'{sum(map(sum, matrix))} bytes point-to-point, {len(report["functions"])} MPI functions used')


if __name__ == '__main__':
    main()
