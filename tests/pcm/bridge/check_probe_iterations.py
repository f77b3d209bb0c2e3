#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A PCM probe is an iteration boundary (docs/pmpi-profiler.md, "Iterations"): the malleable examples, which call no
iteration mark of their own, run with libmalleo_pmpi preloaded, and

- the report counts, for each world rank, exactly the iterations it computed: heat2d (the PCM C API) through a
  split and a merge, and through a migration that replaces rank 0; astro (the C++ API) through a merge and a split
  that takes the process that left back. What each rank computed follows from --iterations and the operations'
  lines (MALLEO_PCM_VERBOSE): a parked process counts none;
- each operation prints heat2d's one line (`iteration K: P processes`), the migration's too;
- the report times MPI_Init apart from the time between MPI_Init and MPI_Finalize, per rank and in total, in the
  JSON, the text summary and `malleo report`;
- a program that marks its own iterations (pcm_marks, every EVERY-th) counts its marks, not the probes;
- a real malleod shows heat2d's iteration time (paced) at 2 and then, after a split, at 3 processes, and the
  point-to-point bytes per iteration of its ranks.

usage: check_probe_iterations.py --mpi M --lib LIBPMPI --malleod MALLEOD --malleo MALLEO --heat2d H --astro A
       --marks PCM_MARKS"""

import argparse
import glob
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import pcm_launch

OPERATION = re.compile(r'^malleo-pcm: (split|merge|migrate) at iteration (\d+): \d+ -> \d+ processes '
                       r'\(world ranks ([\d,]+)\)', re.M)


def expected_counts(stderr, initial, iterations):
    """Iterations each world rank computed: the active set changes at each operation's probe, which the processes
    of the new set compute."""
    changes = sorted((int(it), [int(w) for w in ranks.split(',')]) for _, it, ranks in OPERATION.findall(stderr))
    counts = {}
    for i in range(iterations):
        active = initial
        for at, ranks in changes:
            if at <= i:
                active = ranks
        for w in active:
            counts[w] = counts.get(w, 0) + 1
    return counts, len(changes)


def the_report(directory):
    found = glob.glob(os.path.join(directory, 'malleo-profile-*.json'))
    if len(found) != 1:
        return None, f'expected one report in {directory}, found {found}'
    with open(found[0], encoding='utf-8') as f:
        return json.load(f), None


def run_profiled(opts, ranks, program, env, errors, label):
    """Runs `program` with the preload; returns (process, report) or (process, None) with the problem noted."""
    with tempfile.TemporaryDirectory(prefix='malleo-probe-') as out:
        env = dict(env, LD_PRELOAD=os.path.abspath(opts.lib), MALLEO_PROFILE_DIR=out, MALLEO_AGENT='off')
        proc = pcm_launch.run(opts.mpi, ranks, program, env)
        if proc.returncode != 0:
            errors.append(f'{label}: the run failed\n{pcm_launch.describe(proc)}')
            return proc, None
        report, problem = the_report(out)
        if problem:
            errors.append(f'{label}: {problem}')
            return proc, None
        summary = glob.glob(os.path.join(out, 'malleo-profile-*.txt'))
        report['_summary'] = open(summary[0], encoding='utf-8').read() if summary else ''
        shown = subprocess.run([opts.malleo, 'report', glob.glob(os.path.join(out, '*.json'))[0]],
                               capture_output=True, text=True, timeout=30)
        report['_shown'] = shown.stdout if shown.returncode == 0 else f'malleo report failed: {shown.stderr}'
        return proc, report


def check_counts(label, report, want, errors):
    got = {r['rank']: r['iterations']['count'] for r in report['ranks']}
    want = {w: want.get(w, 0) for w in got}
    if got != want:
        errors.append(f'{label}: iterations per world rank {got}, expected {want}')


def check_lines(label, proc, operations, errors):
    """heat2d and astro print `iteration K: P processes` once per operation, whichever it was."""
    lines = re.findall(r'^iteration \d+: \d+ processes$', proc.stdout, re.M)
    if len(lines) != operations:
        errors.append(f'{label}: {len(lines)} operation lines for {operations} operations:\n{proc.stdout}')


def close(a, b, slack=1e-6):
    return abs(a - b) <= slack + 1e-6 * max(abs(a), abs(b))


def check_times(label, report, errors):
    """MPI_Init apart: per rank its time, the time between MPI_Init and MPI_Finalize and the time in MPI then, which
    is the rank's time in MPI without MPI_Init's; the totals from the ranks; the summary and `malleo report` show
    them and keep MPI_Init out of the shares of the time in MPI."""
    apps, app_mpis = [], []
    for r in report['ranks']:
        init = sum(r['functions'].get(f, {}).get('time_s', 0) for f in ('MPI_Init', 'MPI_Init_thread'))
        if not (r['init_time_s'] > 0 and close(r['init_time_s'], init)):
            errors.append(f'{label}: rank {r["rank"]}: init_time_s {r["init_time_s"]}, MPI_Init took {init}')
        if not close(r['app_mpi_time_s'], r['mpi_time_s'] - init):
            errors.append(f'{label}: rank {r["rank"]}: app_mpi_time_s {r["app_mpi_time_s"]} is not the time in '
                          f'MPI {r["mpi_time_s"]} without MPI_Init {init}')
        if not 0 < r['app_mpi_time_s'] <= r['app_time_s'] < r['wall_time_s']:
            errors.append(f'{label}: rank {r["rank"]}: implausible times {r}')
        apps.append(r['app_time_s'])
        app_mpis.append(r['app_mpi_time_s'])
    totals = report['totals']
    if not (close(totals['app_time_s'], max(apps)) and close(totals['app_mpi_time_s'], sum(app_mpis), 1e-5)
            and close(totals['init_time_s'], max(r['init_time_s'] for r in report['ranks']))
            and abs(totals['app_mpi_percent'] - 100 * sum(app_mpis) / sum(apps)) < 0.01):
        errors.append(f'{label}: totals {totals} do not follow from the ranks')
    for where, text, rows in (('summary', report['_summary'], r'^\s+(\d+) \S+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+%$'),
                              ('malleo report', report['_shown'], r'^\s*(\d+)\s+\S+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.-]+$')):
        if 'MPI_Init' not in text.split('Time in MPI by function')[0] or 'MPI_Finalize not timed' not in text:
            errors.append(f'{label}: the {where} does not give MPI_Init apart:\n{text}')
        per_rank = text.split('Time per rank')[-1].split('Time in MPI by function')[0]
        shown = sorted(int(r) for r in re.findall(rows, per_rank, re.M))
        if shown != sorted(r['rank'] for r in report['ranks']):
            errors.append(f'{label}: the {where} has rows for ranks {shown} in its time per rank:\n{per_rank}')
        functions = text.split('Time in MPI by function')[-1]
        if re.search(r'^\s*MPI_Init', functions, re.M):
            errors.append(f'{label}: the {where} counts MPI_Init among the functions between MPI_Init and '
                          f'MPI_Finalize:\n{functions}')


def reconfigured(opts, errors):
    """heat2d and astro through operations, each count derived from the operations' lines."""
    cases = [
        ('heat2d split, merge', opts.heat2d, 12, 'split@4,merge@8', ['--rows', '16', '--columns', '12']),
        ('heat2d migrate', opts.heat2d, 8, 'migrate@3', ['--rows', '16', '--columns', '12']),
        ('astro merge, split again', opts.astro, 6, 'merge@2,split@4', ['--stars', '2000']),
    ]
    for label, program, iterations, force, args in cases:
        env = {'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': force, 'MALLEO_PCM_VERBOSE': 1}
        proc, report = run_profiled(opts, 3, [program, '--iterations', str(iterations)] + args, env, errors, label)
        if not report:
            continue
        want, operations = expected_counts(proc.stderr, [0, 1], iterations)
        if operations != force.count('@'):
            errors.append(f'{label}: {operations} operations done of {force}\n{proc.stderr}')
        check_counts(label, report, want, errors)
        check_lines(label, proc, operations, errors)
        if program == opts.heat2d and 'merge' in force:
            check_times(label, report, errors)
        print(f'{label}: iterations per world rank {want}')


def own_marks(opts, errors):
    for iterations, every in ((10, 1), (10, 2), (10, 3)):
        label = f'pcm_marks {iterations} {every}'
        proc, report = run_profiled(opts, 2, [opts.marks, str(iterations), str(every)], {}, errors, label)
        if report:
            check_counts(label, report, {0: iterations // every, 1: iterations // every}, errors)
            if 'nobody asked for' in proc.stderr:
                errors.append(f'{label}: {proc.stderr}')


def agent_view(opts, errors):
    """heat2d paced at PACE s an iteration on 2 of 3 processes, split to 3 half way, under a real agent."""
    pace, iterations, rows = 0.04, 80, 64
    with tempfile.TemporaryDirectory(prefix='malleo-probe-agent-') as run_dir:
        agent = pcm_launch.start_plain_agent(opts.malleod, run_dir)
        endpoint = f'ipc://{run_dir}/agent.sock'
        env = {'LD_PRELOAD': os.path.abspath(opts.lib), 'MALLEO_PROFILE_DIR': run_dir, 'MALLEO_AGENT': endpoint,
               'MALLEO_REPORT_INTERVAL': '0.2', 'MALLEO_POOL_ACTIVE': 2, 'MALLEO_FORCE': f'split@{iterations // 2}'}
        cmd = pcm_launch.command(opts.mpi, 3, env, [opts.heat2d, '--iterations', str(iterations), '--rows',
                                                   str(rows), '--columns', '24', '--pace', str(int(pace * 1000))])
        run = subprocess.Popen(cmd, env=pcm_launch.environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        seen, bytes_seen = {}, {}
        try:
            deadline = time.monotonic() + 60
            while run.poll() is None and time.monotonic() < deadline:
                for app in pcm_launch.apps_at(opts.malleo, endpoint):
                    for sample in app['iteration_times']:
                        seen[sample['processes']] = sample['seconds']
                    for p in app['processes']:
                        if p['active'] and p['bytes_local'] > 0:
                            bytes_seen.setdefault(p['rank'], p['bytes_local'])
                time.sleep(0.2)  # the agent's view is polled, as `malleo apps` users do
            if run.poll() is None:
                run.kill()
                errors.append('agent: heat2d did not end within 60 s')
            stdout, stderr = run.communicate()
        finally:
            agent.send_signal(signal.SIGTERM)
            agent.wait(10)
        if run.returncode != 0:
            errors.append(f'agent: heat2d failed ({run.returncode}): {stderr[-2000:]}')
        report, problem = the_report(run_dir)
        if problem:
            errors.append(f'agent: {problem}')
        elif report['ranks'][0]['iterations']['count'] != iterations:
            errors.append(f'agent: rank 0 counted {report["ranks"][0]["iterations"]["count"]} iterations, '
                          f'ran {iterations}')
    # The agent's figure is a running mean of rank 0's iterations at each size; paced, each lasts about `pace`.
    for processes in (2, 3):
        if not pace * 0.8 <= seen.get(processes, 0) <= pace * 2.5:
            errors.append(f'agent: iteration time at {processes} processes {seen.get(processes)}, expected about '
                          f'{pace} s (all seen: {seen})')
    # Each iteration every process sends a ghost column of `rows` doubles to each neighbour (rank 0 has one); a
    # report between a send and the probe that ends the iteration may count an iteration's bytes early.
    column = rows * 8
    if not 0.5 * column <= bytes_seen.get(0, 0) <= 2 * column or not {0, 1, 2} <= set(bytes_seen):
        errors.append(f'agent: bytes per iteration on this host by rank {bytes_seen}, expected about {column} from '
                      f'rank 0 and some from ranks 1 and 2')
    print(f'agent: iteration times {seen}, bytes per iteration {bytes_seen}')


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for option in ('--mpi', '--lib', '--malleod', '--malleo', '--heat2d', '--astro', '--marks'):
        ap.add_argument(option, required=True)
    opts = ap.parse_args()
    errors = []
    reconfigured(opts, errors)
    own_marks(opts, errors)
    agent_view(opts, errors)
    pcm_launch.verdict(errors, f'{len(errors)} problems ({opts.mpi})',
                       f'probes mark iterations under {opts.mpi}')


if __name__ == '__main__':
    main()
