#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The README's first command, `scripts/demo.sh`, run as written from the top of the source tree.

The demo checks each step of its story itself (it exits 1 when a step does not happen within STEP_TIMEOUT). This test
reads what it printed and checks the story from the agents' own timeline: heat2d split onto n2 on n2's work request,
a process sent away by the load on n2, a node drained and gone, no reconfiguration forced by a person, a plot drawn,
the checksum after every reconfiguration equal to a run left alone, the iteration rates before and after the split
(and why, when the split gains nothing), and every row of the timeline marked on the plot (`plot --json`: the
reconfigurations and the nodes' joins, drains and leaves at the same times). The demo runs ./build (the README's layout);
another build under test (the sanitizers') is given to it as BUILD. The cluster lives in a directory of the test's
own and the plot is written there, so nothing of a user's demo is touched.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

SOURCE = os.environ['MALLEO_SOURCE_ROOT']
BUILD = os.environ['MALLEO_BUILD_ROOT']
SCALE = float(os.environ.get('MALLEO_TEST_TIME_SCALE', '1'))

failures = 0


def check(condition, what):
    global failures
    print(('ok: ' if condition else 'FAIL: ') + what, flush=True)
    failures += 0 if condition else 1


def timeline_rows(output):
    """The rows `malleo timeline` printed: (event, why), from its header to the next `==` line."""
    rows, inside = [], False
    for line in output.splitlines():
        if line.split()[:2] == ['TIME', 'ITERATION']:
            inside = True
            continue
        if inside and (line.startswith('==') or not line.strip()):
            break
        if inside:
            cells = re.split(r'\s{2,}', line.strip())
            if len(cells) >= 6:
                rows.append((cells[4], cells[5]))
            elif len(cells) == 5:
                rows.append((cells[4], '-'))
    return rows


def print_agent_logs(cluster):
    """The end of each agent's log and event log: what the agents saw when a step of the story did not happen."""
    for node in sorted(os.listdir(cluster)) if os.path.isdir(cluster) else []:
        for name in ('malleod.log', 'events.jsonl'):
            path = os.path.join(cluster, node, name)
            if os.path.exists(path):
                lines = open(path, errors='replace').read().splitlines()
                print(f'-- the last {min(len(lines), 25)} lines of {node}/{name}:', *lines[-25:], sep='\n', flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix='malleo-demo-test-') as tmp:
        plot = os.path.join(tmp, 'demo-throughput.png')
        env = dict(os.environ, MALLEO_CLUSTER_DIR=os.path.join(tmp, 'cluster'), PLOT=plot,
                   STEP_TIMEOUT=str(int(60 * SCALE)))
        # The README's command as written (it sets up and builds ./build), or the build under test (the sanitizers').
        if os.path.realpath(BUILD) != os.path.realpath(os.path.join(SOURCE, 'build')):
            env['BUILD'] = BUILD
        run = subprocess.run(['scripts/demo.sh'], cwd=SOURCE, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=540 * SCALE)
        print(run.stdout, flush=True)
        check(run.returncode == 0, f'scripts/demo.sh exits 0 ({run.returncode})')
        if run.returncode != 0:
            print_agent_logs(os.path.join(tmp, 'cluster'))
        rows = timeline_rows(run.stdout)
        check(any(e.startswith('split') and e.endswith('-> n2') and w.startswith('work request from n2')
                  for e, w in rows), 'the timeline has a split onto n2 on its work request')
        check(any(e.startswith('migrate') and 'failed' not in e and 'no application here' in w for e, w in rows),
              'the timeline has a process sent away by the load (used by processes of no application)')
        drained = sorted({e.split()[0] for e, _ in rows if e.endswith(' drains')})
        check(len(drained) == 1 and any(e == f'{drained[0]} leaves' for e, _ in rows),
              f'one node drains and then leaves ({drained})')
        check(bool(rows) and not any('force' in e or 'force' in w for e, w in rows),
              f'no reconfiguration was forced ({len(rows)} rows)')
        sums = dict(re.findall(r'^(reconfigured by the agents|left alone):\s+checksum (\w+)$', run.stdout, re.M))
        check(len(sums) == 2 and len(set(sums.values())) == 1, f'the checksums are equal ({sums})')
        header = open(plot, 'rb').read(8) if os.path.exists(plot) else b''
        check(header == b'\x89PNG\r\n\x1a\n', f'the plot is a PNG ({plot})')
        rates = re.search(r'^before the split: (\d+) iterations/s on \d+ process(?:es)?; after it: (\d+) on', run.stdout,
                          re.M)
        check(rates is not None and (int(rates.group(2)) > int(rates.group(1))
                                     or re.search(r'^no gain: ', run.stdout, re.M) is not None),
              f'the rates before and after the split are said, and why when it gains nothing '
              f'({rates.group(0) if rates else None})')
        # What the timeline tells (reconfigurations, joins, drains, leaves) is marked on the plot: its --json lists
        # the same events at the same times.
        logs = sorted(glob.glob(os.path.join(tmp, 'cluster', 'n*', 'events.jsonl')))
        malleo = os.path.join(BUILD, 'cli', 'malleo')
        timeline = subprocess.run([malleo, 'timeline', *logs, '--json'], capture_output=True, text=True, timeout=60)
        drawn = subprocess.run([malleo, 'plot', *logs, '-o', os.path.join(tmp, 'marks.svg'), '--json'],
                               capture_output=True, text=True, timeout=60)
        if timeline.returncode == 0 and drawn.returncode == 0:
            told = sorted((r['event'], round(r['time'], 3)) for r in json.loads(timeline.stdout)['rows'])
            data = json.loads(drawn.stdout)
            marked = sorted((m['event'], round(m['time'], 3)) for m in data['reconfigurations'] + data['nodes'])
            check(told and told == marked and any(e.endswith(' joined') for e, _ in marked)
                  and any(e.endswith(' drains') for e, _ in marked),
                  f'every row of the timeline is a mark of the plot, joins and drains too ({len(told)} rows, '
                  f'{len(marked)} marks)')
        else:
            check(False, f'timeline and plot of the demo\'s logs ({timeline.stderr.strip()} {drawn.stderr.strip()})')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
