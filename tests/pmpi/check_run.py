#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`malleo run -n 2 --mpi MPI -- traffic` exits with the program's status and names the report it wrote;
`malleo report` prints it as tables, the rank x rank matrix among them; a failing program's status comes back
through `malleo run` (MPI_Abort with code 3). Under Open MPI on a host without InfiniBand or Omni-Path devices the
ranks run with the ob1 point-to-point layer (OMPI_MCA_pml=ob1 in their environment, `env` as the program), unless
the user chose a layer, and a run over --hosts is left to Open MPI's choice."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import check_traffic
import pmpi_launch

RANKS, ROUNDS = 2, 2


def bytes_text(n):
    """As `malleo report` prints a number of bytes."""
    units, u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], 0
    while n >= 1024 and u < 4:
        n /= 1024
        u += 1
    return f'{n:.0f} B' if u == 0 else f'{n:.1f} {units[u]}'


def fast_network_device():
    return os.path.exists('/dev/infiniband') or any(n.startswith(('hfi1', 'ipath')) for n in os.listdir('/dev'))


def check_pml_choice(malleo, env, out):
    """The OMPI_MCA_pml a rank sees: ob1 chosen by malleo run here, the user's own, none over --hosts."""
    errors = []
    env = {k: v for k, v in env.items() if k != 'OMPI_MCA_pml'}
    cases = [({}, [], None if fast_network_device() else 'ob1'), ({'OMPI_MCA_pml': 'ob1,cm'}, [], 'ob1,cm'),
             ({}, ['--hosts', 'localhost'], None)]
    for extra, options, want in cases:
        r = subprocess.run([malleo, 'run', '-n', '1', '--mpi', 'openmpi', '--profile-dir', out] + options +
                           ['--', 'env'], env=dict(env, **extra), capture_output=True, text=True, timeout=50,
                           stdin=subprocess.DEVNULL)
        seen = re.findall(r'^OMPI_MCA_pml=(.*)$', r.stdout, re.M)
        if r.returncode != 0 or seen != ([want] if want else []):
            errors.append(f'malleo run {options} with {extra}: status {r.returncode}, the rank saw OMPI_MCA_pml '
                          f'{seen}, expected {want}: {r.stderr[-1000:]}')
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--malleo', required=True)
    ap.add_argument('--early-exit', required=True)
    ap.add_argument('program')
    opts = ap.parse_args()
    launcher = pmpi_launch.LAUNCHERS[opts.mpi]
    if not shutil.which(launcher):
        print(f'SKIP: {launcher} is not installed', file=sys.stderr)
        sys.exit(pmpi_launch.SKIP)
    env = dict(os.environ)
    for key in ('LD_PRELOAD', 'MALLEO_AGENT', 'MALLEO_PROFILE', 'MALLEO_PROFILE_DIR'):
        env.pop(key, None)
    env['MALLEO_AGENT'] = ''  # no agent: this test is about the launch and the report
    env['OMPI_MCA_mpi_yield_when_idle'] = '1'
    errors = []
    with tempfile.TemporaryDirectory(prefix='malleo-run-') as out:
        r = subprocess.run([opts.malleo, 'run', '-n', str(RANKS), '--mpi', opts.mpi, '--profile-dir', out, '--',
                            os.path.abspath(opts.program), str(ROUNDS)],
                           env=env, capture_output=True, text=True, timeout=50, stdin=subprocess.DEVNULL)
        if r.returncode != 0 or 'rounds done' not in r.stdout:
            errors.append(f'malleo run: status {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr[-2000:]}')
        named = re.findall(r'^malleo: report (\S+\.json) ', r.stderr, re.M)
        if len(named) != 1 or not os.path.exists(named[0]):
            errors.append(f'malleo run named {named} as the report: {r.stderr[-2000:]}')
        else:
            v = subprocess.run([opts.malleo, 'report', named[0]], capture_output=True, text=True, timeout=10)
            # Row 0 of the matrix: nothing to itself, then what it sent to rank 1 (check_traffic's expectation).
            want = bytes_text(check_traffic.expected(RANKS, ROUNDS, 'c')[0][1][1][1])
            if v.returncode != 0:
                errors.append(f'malleo report: status {v.returncode}: {v.stderr}')
            for needle in ('Time in MPI by function', 'MPI_Send', 'Message sizes',
                           'row = sender, column = receiver', 'Iteration times'):
                if needle not in v.stdout:
                    errors.append(f'malleo report lacks {needle!r}:\n{v.stdout}')
            if not re.search(rf'^\s*0\s+0 B\s+{re.escape(want)}\s*$', v.stdout, re.M):
                errors.append(f'malleo report: no matrix row "0  0 B  {want}":\n{v.stdout}')
            j = subprocess.run([opts.malleo, 'report', '--json', named[0]], capture_output=True, text=True,
                               timeout=10)
            if j.returncode != 0 or '"matrix_bytes"' not in j.stdout:
                errors.append(f'malleo report --json: status {j.returncode}: {j.stderr}')
        bad = subprocess.run([opts.malleo, 'report', os.path.join(out, 'missing.json')], capture_output=True,
                             text=True, timeout=10)
        if bad.returncode != 2:
            errors.append(f'malleo report of a missing file: status {bad.returncode}, expected 2')

        a = subprocess.run([opts.malleo, 'run', '-n', str(RANKS), '--mpi', opts.mpi, '--profile-dir', out, '--',
                            os.path.abspath(opts.early_exit), 'abort'],
                           env=env, capture_output=True, text=True, timeout=50, stdin=subprocess.DEVNULL)
        if a.returncode != 3:
            errors.append(f'malleo run of a program calling MPI_Abort(3): status {a.returncode}: {a.stderr[-2000:]}')
        if opts.mpi == 'openmpi':
            errors += check_pml_choice(opts.malleo, env, out)
    pmpi_launch.verdict(errors, f'{len(errors)} problems ({opts.mpi})',
                        f'malleo run and malleo report under {opts.mpi}')


if __name__ == '__main__':
    main()
