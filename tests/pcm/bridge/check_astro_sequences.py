#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""astro in pool mode after random seeded sequences of split, merge and migrate: every run must print exactly the
static run's fitted parameters and log-likelihood (decimal and hexadecimal floats), star count and digest, and
checksum — bitwise, no tolerance: the sums are exact (examples/astro/exact_sum.h). Every operation must have
happened and the final size must be the one the sequence leads to. The sequences come from the heat2d checker's
generator and, taken together, go down to 1 process and up to more processes than the machine has cores. With
--shared, the stars live in shared blocks (MALLEO_PCM_SHARED_PAGES=on; give enough --stars for blocks of more than
1 MiB, 16 bytes a star) and the operations together must have taken some over by their pages."""

import json
import os
import re
import sys
import tempfile

import pcm_launch
from check_heat2d_sequences import check_sizes_seen, chosen_sequences, judge, sequence, sequence_parser


def result_lines(proc):
    """The lines that must match the static run's bit for bit."""
    return re.findall(r'^(?:fit: .*|stars .*|checksum [0-9a-f]{16})$', proc.stdout, re.M)


def main():
    ap = sequence_parser(__doc__)
    ap.add_argument('--stars', type=int, default=20000)
    ap.add_argument('--iterations', type=int, default=30)
    ap.add_argument('--models', type=int, default=1, help="astro's trial models an iteration")
    ap.add_argument('--shared', action='store_true', help='the stars in shared blocks, some taken over as pages')
    ap.add_argument('program')
    opts = ap.parse_args()
    args = [opts.program, '--stars', str(opts.stars), '--iterations', str(opts.iterations), '--models',
            str(opts.models)]

    static = pcm_launch.run(opts.mpi, 1, args)
    want = result_lines(static)
    if static.returncode != 0 or len(want) != 3:
        sys.exit('FAIL: static run\n' + pcm_launch.describe(static))
    # A fit that did not converge would make the comparison weaker than it looks: the answer must be near the
    # population's (mean -12.5 km/s, scale 35 km/s).
    fit = re.match(r'fit: mean (\S+) km/s, scale (\S+) km/s', want[0])
    if not fit or abs(float(fit.group(1)) + 12.5) > 2 or abs(float(fit.group(2)) - 35) > 2:
        sys.exit(f'FAIL: the static fit is off: {want[0]}')

    failures, seen, taken = [], set(), 0
    for index, (force, ops, start, final, sizes) in chosen_sequences(
            opts, lambda rng: sequence(rng, opts.world, opts.iterations)):
        seen.update(sizes)
        env = {'MALLEO_POOL_ACTIVE': start, 'MALLEO_FORCE': force, 'MALLEO_PCM_VERBOSE': 1,
               'MALLEO_PCM_SHARED_PAGES': 'on' if opts.shared else 'off'}
        with tempfile.TemporaryDirectory() as tmp:
            if opts.shared:
                env['MALLEO_PCM_PHASES'] = os.path.join(tmp, 'phases.jsonl')
            proc = pcm_launch.run(opts.mpi, opts.world, args, env)
            if opts.shared and os.path.exists(env['MALLEO_PCM_PHASES']):
                with open(env['MALLEO_PCM_PHASES'], encoding='utf-8') as f:
                    taken += sum(json.loads(line)['taken_as_pages'] for line in f)
        done = pcm_launch.completed_operations(proc)
        problems = []
        if proc.returncode != 0:
            problems.append(f'exit code {proc.returncode}')
        got = result_lines(proc)
        if got != want:
            problems.append(f'result {got} != static {want}')
        if pcm_launch.final_processes(proc) != final:
            problems.append(f'final size {pcm_launch.final_processes(proc)} != {final}')
        if [op for op, *_ in done] != [op for op, _ in ops]:
            problems.append(f'operations done {done} != asked {ops}')
        if 'failed' in proc.stderr:
            problems.append('an operation failed')
        judge(failures, index, start, force, sizes, problems, proc)
    check_sizes_seen(failures, seen)
    if opts.shared and not taken:
        failures.append('--shared: no operation took any stars over as pages')
    pcm_launch.verdict(failures, f'{len(failures)} of {opts.sequences} sequences',
                       f'{opts.sequences} sequences under {opts.mpi} gave the static fit, bit for bit: {want[2]}')


if __name__ == '__main__':
    main()
