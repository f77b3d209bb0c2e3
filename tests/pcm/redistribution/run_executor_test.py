# SPDX-License-Identifier: Apache-2.0
"""Run the executor test program on N ranks under one MPI (Open MPI or MPICH); exit with its status, 77 to skip."""

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'python'))
from testkit import LAUNCHERS, TIME_SCALE, launcher_command, launcher_env  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--mpi', choices=sorted(LAUNCHERS), required=True, help='which MPI launches the program')
    parser.add_argument('--ranks', type=int, required=True, help='number of ranks')
    parser.add_argument('--timeout', type=float, default=150,
                        help='seconds before the run counts as hung, times MALLEO_TEST_TIME_SCALE (5 in the asan '
                             'test setup)')
    parser.add_argument('program', nargs=argparse.REMAINDER, help='the program and its arguments')
    args = parser.parse_args()
    args.timeout *= TIME_SCALE

    program = list(args.program)
    program[0] = os.path.abspath(program[0])
    # More ranks than cores: a busy-polling rank would hold the core its peer needs (Open MPI yields when idle).
    cmd = launcher_command(args.mpi, args.ranks, {}, program)
    env = launcher_env(drop=('LD_PRELOAD',))
    try:
        done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f'FAIL: {args.ranks} ranks under {args.mpi} did not finish in {args.timeout:.0f} s', file=sys.stderr)
        return 1
    return done.returncode


if __name__ == '__main__':
    sys.exit(main())
