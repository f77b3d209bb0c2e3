#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, builds and shows the loop closed, on this machine: a virtual cluster of malleo agents with the `ios`
# decision module reconfigures a running MPI application (heat2d) by itself, with no `malleo force` anywhere:
#  1. heat2d starts on node n1 alone;
#  2. a node joins (`malleo cluster add`): the application splits onto it;
#  3. a real CPU load on that node (`malleo load`): its process leaves;
#  4. once the load is over a third node joins: n2 or n3, idle, gets a process of heat2d;
#  5. that node drains (`malleo drain`): its process moves away, then its agent exits;
# then the agents' event logs as a timeline and a plot, and heat2d's checksum against a run left alone: equal, bit
# for bit, or this script exits 1. About 3 minutes. Ctrl-C stops everything (cluster, load, application).
#
# Environment: ITERATIONS (heat2d's steps, 20000), ROWS and COLUMNS (its grid, 2048 x 1024), LOAD_SECONDS (20),
# TOP_SECONDS (how long `malleo top` is shown, 8), STEP_TIMEOUT (seconds each step may take, 60),
# MALLEO_CLUSTER_DIR (/tmp/malleo-demo-<uid>), PLOT (the plot's file, demo-throughput.png), BUILD (the build
# directory whose programs run, build; another one is not set up or built here: the sanitizer build's test).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ "$BUILD" = build ]; then
  scripts/setup.sh --demo >/dev/null
fi
ITERATIONS=${ITERATIONS:-20000}
ROWS=${ROWS:-2048}
COLUMNS=${COLUMNS:-1024}
LOAD_SECONDS=${LOAD_SECONDS:-20}
TOP_SECONDS=${TOP_SECONDS:-8}
STEP_TIMEOUT=${STEP_TIMEOUT:-60}
PLOT=${PLOT:-demo-throughput.png}
export MALLEO_CLUSTER_DIR=${MALLEO_CLUSTER_DIR:-/tmp/malleo-demo-$(id -u)}
# How often the application's coordinator asks its agent for a command (0.2 s by default): a little quicker here.
export MALLEO_POLL_INTERVAL=0.1
malleo=$BUILD/cli/malleo
heat2d=$BUILD/examples/heat2d/heat2d_openmpi
grid=(--rows "$ROWS" --columns "$COLUMNS" --iterations "$ITERATIONS")
out=$(mktemp -d)

run=""
load_ends=0
cleanup() {
  if [ -n "$run" ] && kill -0 "$run" 2>/dev/null; then
    kill -TERM "$run" 2>/dev/null || true  # malleo run passes it to the launcher, which ends the ranks
    wait "$run" 2>/dev/null || true
  fi
  $malleo load --stop >/dev/null 2>&1 || true
  $malleo cluster down >/dev/null 2>&1 || true
  rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "== $*" >&2
  if [ -f "$out/loop.txt" ]; then
    echo "-- the application's last lines:" >&2
    grep -v -e '^time: ' "$out/loop.txt" | tail -5 >&2
  fi
  explain_nodes >&2
  exit 1
}

# Why a node may not have asked for work: each agent's available CPU share (APW) against the threshold of
# configs/demo-loop.json, and what else is busy on the machine. A node whose CPU is taken by something that is not
# the demo's (a build, another program) is not idle, so it never asks, and the story stops there.
explain_nodes() {
  echo "-- the nodes' CPU as their agents see it, and the busiest processes of this machine:"
  local node
  for node in $($malleo cluster status --json 2>/dev/null | python3 -c '
import json, sys
for n in json.load(sys.stdin).get("nodes", []):
    if n.get("running"):
        print(n["name"])' 2>/dev/null); do
    $malleo --node "$node" status --json 2>/dev/null | python3 -c '
import json, sys
node, threshold = sys.argv[1], json.load(open("configs/demo-loop.json"))["work_stealing"]["idle_threshold"]
p = json.load(sys.stdin)["profile"]
apw, upw = p["apw"], p["upw"]
print(f"{node}: available CPU share (APW) {apw:.2f}, used (UPW) {upw:.2f}; "
      f"it asks for work at APW {threshold} and above")' "$node" || echo "$node: no answer"
  done
  ps -eo pid,psr,ni,pcpu,comm --sort=-pcpu | head -6
}

# The application's processes on NODE that compute, from every agent's view of it (0 when none); with "settled" as a
# second argument, 0 too while a command of the application is queued or in flight.
active_on() {
  "${on_n1[@]}" $malleo apps --json 2>/dev/null | "${on_n1[@]}" python3 -c '
import json, sys
node, settled = sys.argv[1], len(sys.argv) > 2
try:
    apps = json.load(sys.stdin)["apps"]
except (ValueError, KeyError):
    apps = []
if settled and any(a.get("command") for a in apps):
    apps = []
print(sum(n["active"] for a in apps for n in a.get("nodes", []) if n["node"] == node))' "$@"
}

# Whether the application has at least COUNT active processes on NODE ("settled": and no command in flight); none.
has_active() { [ "$(active_on "$1" "${@:3}")" -ge "$2" ]; }
has_none() { [ "$(active_on "$1")" -eq 0 ]; }
load_over() { [ "$SECONDS" -ge "$load_ends" ]; }
# Whether rank 0 has timed at least COUNT iterations on 2 processes (its --times lines reach the file in chunks).
timed_on_two() { [ "$(grep -c ' on 2 processes$' "$out/loop.txt")" -ge "$1" ]; }

# wait_until WHAT COMMAND ARGS...: runs the command every 0.5 s until it succeeds; fails after STEP_TIMEOUT seconds
# or when the application has ended (it was too short for the story: more ITERATIONS).
wait_until() {
  local what=$1 deadline=$((SECONDS + STEP_TIMEOUT))
  shift
  until "$@"; do
    kill -0 "$run" 2>/dev/null || fail "heat2d ended before $what (raise ITERATIONS)"
    [ "$SECONDS" -lt "$deadline" ] || fail "$what did not happen within $STEP_TIMEOUT s"
    sleep 0.5
  done
}

$malleo load --stop >/dev/null 2>&1 || true
$malleo cluster down >/dev/null 2>&1 || true
rm -f "$MALLEO_CLUSTER_DIR"/n*/events.jsonl  # the timeline is this run's alone

echo "== a cluster of one node, agents deciding with the ios module (configs/demo-loop.json)"
$malleo cluster up --nodes 1 --config configs/demo-loop.json
# This script's looks at the application (a `malleo apps` and a python3 each) run on n1's CPUs, where heat2d runs
# anyway: left to the scheduler they go to the CPU that is idle, the next node's, whose agent then sees its node partly
# used and may not ask for work (it asks at 75 % idle).
n1_cpus=$($malleo cluster status --json | python3 -c '
import json, sys
print(",".join(str(c) for n in json.load(sys.stdin)["nodes"] if n["name"] == "n1" for c in n["cpus"]))')
on_n1=(taskset -c "$n1_cpus")

echo
echo "== heat2d on n1, spawn mode (Open MPI): $ROWS x $COLUMNS, $ITERATIONS iterations"
# MALLEO_PCM_VERBOSE: the bridge prints each reconfiguration, and where each process it starts runs.
MALLEO_PCM_VERBOSE=1 $malleo --node n1 run -n 1 --mode spawn --profile-dir "$out" -- \
  $heat2d "${grid[@]}" --progress 1000 --times >"$out/loop.txt" 2>&1 &
run=$!
wait_until "heat2d's registration with n1" has_active n1 1
$malleo apps

echo
echo "== a node joins: malleo cluster add"
$malleo cluster add
wait_until "a split onto n2" has_active n2 1
$malleo apps
# The split's rate is measured before n2 is loaded: a while on two processes first, and the iterations timed up to
# the load are the ones rated below (after it, n2's process shares its CPU with the load until it leaves).
wait_until "1000 iterations on 2 processes" timed_on_two 1000

echo
echo "== a CPU load on n2 for $LOAD_SECONDS s: its process leaves; malleo top for $TOP_SECONDS s"
# Two busy loops on n2's one CPU: two thirds of it taken by something that is no application's.
timed_before_load=$(grep -c '^time: ' "$out/loop.txt")
$malleo load --node n2 --cpus 2 --for "$LOAD_SECONDS"
load_ends=$((SECONDS + LOAD_SECONDS))
$malleo top --duration "$TOP_SECONDS"
wait_until "the process leaving loaded n2" has_none n2
$malleo apps

echo
echo "== the load ends after $LOAD_SECONDS s; a third node joins, on n2's CPU: one of the two idle nodes gets work"
wait_until "the end of the load" load_over
# This machine may have 2 CPUs: n3 runs on CPU 1 beside n2 (the load is over), so either idle node's work request
# may be the one answered; the node that gets the process is the one that drains next.
$malleo cluster add --cpus 1
has_active_n2_or_n3() { has_active n2 1 settled || has_active n3 1 settled; }
wait_until "a process of heat2d on n2 or n3" has_active_n2_or_n3
if has_active n3 1; then leaving=n3; else leaving=n2; fi
$malleo apps

echo
echo "== $leaving drains: malleo drain $leaving --wait 60"
$malleo drain "$leaving" --wait 60 || fail "$leaving did not drain"
wait_until "the process leaving drained $leaving" has_none "$leaving"
$malleo apps

echo "== heat2d runs to its end"
status=0
wait "$run" || status=$?
run=""
[ "$status" -eq 0 ] || fail "heat2d ended with status $status"
grep -e '^malleo-pcm: spawned' -e '^final' -e '^checksum' "$out/loop.txt" || true
# Iterations per second at each process count, from rank 0's --times.
python3 - "$out/loop.txt" "$timed_before_load" <<'EOF'
import re, sys
by_size = {}
for seconds, size in re.findall(r"^time: iteration \d+ ([0-9.]+) s on (\d+) processes", open(sys.argv[1]).read(),
                                re.M):
    by_size.setdefault(int(size), []).append(float(seconds))
for size, times in sorted(by_size.items()):
    print(f"on {size} process{'es' if size > 1 else ''}: {len(times)} iterations in {sum(times):.1f} s, "
          f"{len(times) / sum(times):.0f} iterations/s")
# The rates just before and just after the first split: the stretch on the first size, then the one after it up to
# the load on n2 (the iterations timed before it began).
runs = []
timed = re.findall(r"^time: iteration \d+ ([0-9.]+) s on (\d+) processes", open(sys.argv[1]).read(), re.M)
for seconds, size in timed[:int(sys.argv[2])]:
    if not runs or runs[-1][0] != int(size):
        runs.append((int(size), []))
    runs[-1][1].append(float(seconds))
if len(runs) >= 2 and runs[1][0] > runs[0][0]:
    (n0, t0), (n1, t1) = runs[0], runs[1]
    before, after = len(t0) / sum(t0), len(t1) / sum(t1)
    print(f"before the split: {before:.0f} iterations/s on {n0} process{'es' if n0 > 1 else ''}; "
          f"after it: {after:.0f} on {n1} processes "
          f"({100 * (after / before - 1):+.0f} %)")
    if after <= before:
        import os
        print(f"no gain: this machine's {os.cpu_count()} CPUs carry the demo's nodes and everything else on it "
              f"(load average {os.getloadavg()[0]:.1f}); a second process gains only on a CPU left to it")
EOF

echo
echo "== the timeline, from the agents' event logs"
logs=("$MALLEO_CLUSTER_DIR"/n*/events.jsonl)
$malleo timeline "${logs[@]}"
$malleo plot "${logs[@]}" -o "$PLOT"

echo
echo "== heat2d, left alone on 1 process"
$malleo --agent off run -n 1 --profile-dir "$out" -- $heat2d "${grid[@]}" >"$out/static.txt" 2>&1
a=$(grep '^checksum' "$out/loop.txt" || true)
b=$(grep '^checksum' "$out/static.txt" || true)
echo "reconfigured by the agents: $a"
echo "left alone:                 $b"
if [ -n "$a" ] && [ "$a" = "$b" ]; then
  echo "== same result, bit for bit"
else
  fail "results differ"
fi
