# SPDX-License-Identifier: Apache-2.0
"""Run the executor test program on N ranks under one MPI (Open MPI or MPICH); exit with its status, 77 to skip."""

import argparse
import os
import shutil
import subprocess
import sys

SKIP = 77
LAUNCHERS = {'openmpi': 'mpirun.openmpi', 'mpich': 'mpiexec.mpich'}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--mpi', choices=sorted(LAUNCHERS), required=True, help='which MPI launches the program')
    parser.add_argument('--ranks', type=int, required=True, help='number of ranks')
    parser.add_argument('--timeout', type=float, default=150,
                        help='seconds before the run counts as hung, times MALLEO_TEST_TIME_SCALE (5 in the asan '
                             'test setup)')
    parser.add_argument('program', nargs=argparse.REMAINDER, help='the program and its arguments')
    args = parser.parse_args()
    args.timeout *= float(os.environ.get('MALLEO_TEST_TIME_SCALE', '1'))

    launcher = shutil.which(LAUNCHERS[args.mpi])
    if not launcher:
        print(f'SKIP: {LAUNCHERS[args.mpi]} is not installed', file=sys.stderr)
        return SKIP
    program = list(args.program)
    program[0] = os.path.abspath(program[0])
    env = dict(os.environ)
    env.pop('LD_PRELOAD', None)
    if args.mpi == 'openmpi':
        cmd = [launcher, '--oversubscribe', '--bind-to', 'none', '-n', str(args.ranks)]
        env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
                   OMPI_MCA_rmaps_base_oversubscribe='1',
                   # More ranks than cores: a busy-polling rank would hold the core its peer needs.
                   OMPI_MCA_mpi_yield_when_idle='1')
    else:
        cmd = [launcher, '-n', str(args.ranks)]
    try:
        done = subprocess.run(cmd + program, env=env, stdin=subprocess.DEVNULL, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f'FAIL: {args.ranks} ranks under {args.mpi} did not finish in {args.timeout:.0f} s', file=sys.stderr)
        return 1
    return done.returncode


if __name__ == '__main__':
    sys.exit(main())
