#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The agent delta reporter: a real malleod, the `iterations` program (known iteration length and ring traffic) on 2
ranks with the preload and MALLEO_AGENT, watched through `malleo apps --json` while it runs: the application shows
both ranks, rank 0's iteration time, bytes per iteration on this host (none elsewhere), and is gone once the program
ends (deregister). Then with MALLEO_AGENT naming a socket nobody listens on: the program ends normally and its report
has the same counts as a run with no agent configured at all."""

import argparse
import glob
import json
import os
import signal
import subprocess
import tempfile
import time

import pmpi_launch

RANKS = 2
COUNT, SECONDS, BYTES = 15, 0.2, 1000


def launch(mpi, lib, program, args, out, agent):
    env = {'LD_PRELOAD': os.path.abspath(lib), 'MALLEO_PROFILE': 'full', 'MALLEO_PROFILE_DIR': out,
           'MALLEO_REPORT_INTERVAL': '0.5'}
    if agent is not None:
        env['MALLEO_AGENT'] = agent
    cmd = pmpi_launch.launcher_command(mpi, RANKS, env, [os.path.abspath(program)] + [str(a) for a in args])
    launcher_env = pmpi_launch.launcher_env(True)
    launcher_env.pop('MALLEO_AGENT', None)  # the ranks get exactly what `env` says
    return subprocess.Popen(cmd, env=launcher_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def counts(report_dir):
    """What must not depend on the agent: calls and bytes per function and rank, the matrices, iteration counts."""
    found = glob.glob(f'{report_dir}/malleo-profile-*.json')
    if len(found) != 1:
        return None, f'expected one report, found {found}'
    report = json.load(open(found[0], encoding='utf-8'))
    ranks = {r['rank']: ({fn: (v['calls'], v['bytes']) for fn, v in r['functions'].items()},
                         r['iterations']['count']) for r in report['ranks']}
    return (report['complete'], ranks, report.get('matrix_messages'), report.get('matrix_bytes')), None


def watch(opts, errors):
    with tempfile.TemporaryDirectory(prefix='malleo-pmpi-agent-') as run_dir:
        agent = pmpi_launch.start_plain_agent(opts.malleod, run_dir)
        endpoint = f'ipc://{run_dir}/agent.sock'
        try:
            proc = launch(opts.mpi, opts.lib, opts.program, [COUNT, SECONDS, BYTES], run_dir, endpoint)
            best, seen = None, []
            deadline = time.monotonic() + 40
            while proc.poll() is None and time.monotonic() < deadline:
                for app in pmpi_launch.apps_at(opts.malleo, endpoint):
                    seen.append(app)
                    ranks = {p['rank'] for p in app['processes']}
                    if ranks == set(range(RANKS)) and app['iteration_times'] and \
                            all(p['bytes_local'] > 0 for p in app['processes']):
                        best = app
                time.sleep(0.25)
            if proc.poll() is None:
                proc.kill()
                errors.append('the program did not end within 40 s')
            stdout, stderr = proc.communicate()
            if proc.returncode != 0 or f'{COUNT} iterations done' not in stdout:
                errors.append(f'the program failed ({proc.returncode}): {stderr[-2000:]}')
            left = pmpi_launch.apps_at(opts.malleo, endpoint)
            if left:
                errors.append(f'after the program ended the agent still lists {left}')
        finally:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(5)
            except subprocess.TimeoutExpired:
                agent.kill()
    if best is None:
        errors.append(f'never saw the application with both ranks, iteration times and bytes; saw {seen[-3:]}')
        return
    name = os.path.basename(opts.program)
    if not best['id'].startswith(name + '-'):
        errors.append(f'application id {best["id"]} does not start with {name}-')
    if best['size'] != RANKS or best['malleable']:
        errors.append(f'size {best["size"]} / malleable {best["malleable"]}: expected {RANKS} / false')
    last = best['iteration_times'][-1]
    if last['processes'] != RANKS or abs(last['seconds'] - SECONDS) > 0.08:
        errors.append(f'iteration time {last}: expected ~{SECONDS} s at {RANKS} processes')
    for p in best['processes']:
        # The ring sends BYTES to one neighbour per iteration; a report taken between a send and its mark can
        # count one iteration's bytes early, hence the margin.
        if not (0.5 * BYTES <= p['bytes_local'] <= 2 * BYTES) or p['bytes_remote'] != 0:
            errors.append(f'rank {p["rank"]}: bytes_local {p["bytes_local"]}, bytes_remote {p["bytes_remote"]}: '
                          f'expected ~{BYTES} and 0 (one host)')
        if not (0 <= p['cpu_share'] <= 1) or p['units'] != 1 or p['pid'] <= 0:
            errors.append(f'rank {p["rank"]}: implausible cpu_share/units/pid in {p}')


def without_agent(opts, errors):
    results = {}
    for label, agent in (('no MALLEO_AGENT', None), ('absent agent', '/nonexistent-malleo/agent.sock')):
        with tempfile.TemporaryDirectory(prefix='malleo-pmpi-agent-') as out:
            endpoint = None if agent is None else f'ipc://{agent}'
            proc = launch(opts.mpi, opts.lib, opts.program, [5, 0.05, BYTES], out, endpoint)
            try:
                stdout, stderr = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                errors.append(f'{label}: the program did not end within 30 s')
                continue
            if proc.returncode != 0 or '5 iterations done' not in stdout:
                errors.append(f'{label}: the program failed ({proc.returncode}): {stderr[-2000:]}')
            if agent and agent not in stderr:
                errors.append(f'{label}: stderr does not say the reports to {agent} were lost: {stderr[-2000:]}')
            results[label], problem = counts(out)
            if problem:
                errors.append(f'{label}: {problem}')
    if len(set(map(json.dumps, results.values()))) > 1:
        errors.append(f'the reports differ with and without an unreachable agent: {results}')


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--malleod', required=True)
    ap.add_argument('--malleo', required=True)
    ap.add_argument('program')
    opts = ap.parse_args()
    errors = []
    watch(opts, errors)
    without_agent(opts, errors)
    pmpi_launch.verdict(errors, f'{len(errors)} problems ({opts.mpi})',
                        f'the agent saw {RANKS} ranks, their iterations and bytes, and their deregistration under '
                        f'{opts.mpi}')


if __name__ == '__main__':
    main()
