#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""spawn.c on 2 ranks: two reports, the parent's with MPI_Comm_spawn and one 4-byte message outside its world,
the child's with the matching MPI_Recv. Open MPI only: Debian's MPICH (UCX netmod) cannot spawn."""

import argparse
import glob
import json
import sys
import tempfile

import pmpi_launch


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('program')
    opts = ap.parse_args()
    if opts.mpi != 'openmpi':
        print(f'SKIP: {opts.mpi} on Debian 12 cannot spawn (UCX netmod)', file=sys.stderr)
        sys.exit(pmpi_launch.SKIP)
    errors = []
    with tempfile.TemporaryDirectory(prefix='malleo-pmpi-') as out:
        proc = pmpi_launch.run(opts.mpi, 2, [opts.program], opts.lib, out)
        if proc.returncode != 0 or 'child got 42' not in proc.stdout:
            sys.exit(f'FAIL: rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}')
        reports = [json.load(open(f, encoding='utf-8')) for f in glob.glob(f'{out}/malleo-profile-*.json')]
    parents = [r for r in reports if r['world_size'] == 2]
    children = [r for r in reports if r['world_size'] == 1]
    if len(reports) != 2 or len(parents) != 1 or len(children) != 1:
        sys.exit(f'FAIL: expected a parent and a child report, got world sizes {[r["world_size"] for r in reports]}')
    for rank in parents[0]['ranks']:
        want = {'messages': 1, 'bytes': 4} if rank['rank'] == 0 else {'messages': 0, 'bytes': 0}
        if rank['p2p_sent']['outside_world'] != want:
            errors.append(f'parent rank {rank["rank"]} outside_world {rank["p2p_sent"]["outside_world"]} != {want}')
        if rank['functions'].get('MPI_Comm_spawn', {}).get('calls') != 1:
            errors.append(f'parent rank {rank["rank"]}: MPI_Comm_spawn not counted once')
    if children[0]['ranks'][0]['functions'].get('MPI_Recv', {}).get('calls') != 1:
        errors.append('child: MPI_Recv not counted once')
    pmpi_launch.verdict(errors, 'spawn',
                        'parent and spawned child reported separately; the message to the child is outside the world')


if __name__ == '__main__':
    main()
