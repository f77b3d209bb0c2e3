# SPDX-License-Identifier: Apache-2.0
"""Run an MPI program under one MPI's launcher with libmalleo_pmpi preloaded into the ranks only."""

import os
import shutil
import subprocess
import sys

SKIP = 77

LAUNCHERS = {'openmpi': 'mpirun.openmpi', 'mpich': 'mpiexec.mpich'}


def launcher_command(mpi, ranks, env_for_ranks, program):
    launcher = shutil.which(LAUNCHERS[mpi])
    if not launcher:
        print(f'SKIP: {LAUNCHERS[mpi]} is not installed', file=sys.stderr)
        sys.exit(SKIP)
    if mpi == 'openmpi':
        cmd = [launcher, '--oversubscribe', '--bind-to', 'none', '-n', str(ranks)]
        for key, value in env_for_ranks.items():
            cmd += ['-x', f'{key}={value}']
    else:
        cmd = [launcher, '-n', str(ranks)]
        for key, value in env_for_ranks.items():
            cmd += ['-genv', key, value]
    return cmd + list(program)


def launcher_env(yield_when_idle):
    env = dict(os.environ)
    env.pop('LD_PRELOAD', None)  # the launcher itself must not be profiled
    env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_rmaps_base_oversubscribe='1')
    if yield_when_idle:
        # On 2 shared cores a busy-polling rank can hold the CPU its peer needs for a whole time slice: latency-
        # bound phases (hpcc's ping-pongs) then took 20-50 s instead of 2 s. Yielding keeps the tests short.
        env['OMPI_MCA_mpi_yield_when_idle'] = '1'
    return env


def run(mpi, ranks, program, preload=None, profile_dir=None, mode='full', timeout=50, yield_when_idle=True):
    """Run program (a list) on `ranks` ranks; returns the CompletedProcess."""
    env_for_ranks = {}
    program = list(program)
    if os.path.exists(program[0]):
        program[0] = os.path.abspath(program[0])  # meson passes build-relative paths
    if preload:
        preload = os.path.abspath(preload)
        env_for_ranks = {'LD_PRELOAD': preload, 'MALLEO_PROFILE': mode, 'MALLEO_PROFILE_DIR': profile_dir or '.'}
    cmd = launcher_command(mpi, ranks, env_for_ranks, program)
    return subprocess.run(cmd, env=launcher_env(yield_when_idle), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)
