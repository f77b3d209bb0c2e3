#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The papers' PCM skeleton (pcm_skeleton.c) runs malleably: after a split, a migration and a merge in pool mode its
final sum is the static run's. (The sum of integers times small weights is exact in doubles, so the reduction order
does not matter.)"""

import argparse
import re
import sys

import pcm_launch


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('program')
    opts = ap.parse_args()
    static = pcm_launch.run(opts.mpi, 2, [opts.program])
    env = {'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': 'split@3:2,migrate@8:1,merge@14:3', 'MALLEO_PCM_VERBOSE': 1}
    malleable = pcm_launch.run(opts.mpi, 6, [opts.program], env)
    want = re.findall(r'^sum ([0-9a-f]{16}) on 2 processes$', static.stdout, re.M)
    got = re.findall(r'^sum ([0-9a-f]{16}) on 1 processes$', malleable.stdout, re.M)
    done = [op for op, *_ in pcm_launch.completed_operations(malleable)]
    if static.returncode or malleable.returncode or len(want) != 1 or got != want or done != ['split', 'migrate',
                                                                                            'merge']:
        sys.exit(f'FAIL: static {want}, malleable {got}, operations {done}\n' + pcm_launch.describe(malleable))
    print(f'ok: the skeleton split, migrated and merged and summed to {want[0]} as the static run')


if __name__ == '__main__':
    main()
