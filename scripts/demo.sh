#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, builds and shows, on this machine:
#  1. a virtual cluster of malleo agents: they join, exchange profiles and pass
#     work-stealing requests while a real CPU hog loads one CPU (DURATION s);
#  2. a malleable MPI application: heat2d split, migrated and merged while it
#     runs, with the same result, bit for bit, as a run left alone.
# Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
NODES=${NODES:-6}
DURATION=${DURATION:-40}
export MALLEO_CLUSTER_DIR=${MALLEO_CLUSTER_DIR:-/tmp/malleo-demo-$(id -u)}
malleo=build/cli/malleo

hog=""
cleanup() {
  [ -n "$hog" ] && kill "$hog" 2>/dev/null || true
  $malleo cluster down >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

$malleo cluster down >/dev/null 2>&1 || true
$malleo cluster up --nodes "$NODES" --config configs/demo-cluster.json
# A real CPU hog on CPU 0: the nodes pinned there become busy, those on the
# other CPUs idle, and the idle ones' work-stealing requests find the busy ones.
taskset -c 0 sh -c 'while :; do :; done' &
hog=$!
$malleo top --duration "$DURATION"
kill "$hog" 2>/dev/null || true
hog=""
$malleo cluster down >/dev/null

# 2. heat2d over a pool of 6 Open MPI processes, 2 active; the bridge carries out a forced schedule and prints each
# operation with its phases (3. below sends the commands through an agent instead).
out=$(mktemp -d)
heat2d=build/examples/heat2d/heat2d_openmpi
export MALLEO_AGENT=
echo
echo "== heat2d, malleable: split +2 at iteration 20, migrate 1 at 40, merge -3 at 60, split +1 at 80"
MALLEO_FORCE="split@20:2,migrate@40:1,merge@60:3,split@80:1" MALLEO_PCM_VERBOSE=1 \
  $malleo run -n 2 --max 6 --profile-dir "$out" -- $heat2d --iterations 100 --progress 20 2>&1 |
  grep -v -e '^malleo: ' -e '^malleo-pmpi: ' | tee "$out/malleable.txt"
echo
echo "== heat2d, left alone on 2 processes"
$malleo run -n 2 --profile-dir "$out" -- $heat2d --iterations 100 --progress 50 2>&1 |
  grep -v -e '^malleo: ' -e '^malleo-pmpi: ' | tee "$out/static.txt"
a=$(grep '^checksum' "$out/malleable.txt"); b=$(grep '^checksum' "$out/static.txt")
echo
if [ -n "$a" ] && [ "$a" = "$b" ]; then
  echo "== same result, bit for bit ($a)"
else
  echo "== results differ: '$a' vs '$b'"
  exit 1
fi

# 3. The same program commanded through its agent: `malleo force` queues a command at the agent hosting rank 0, the
# program's coordinator takes it at its next probe and reports the result back. --pace keeps the run going (400
# iterations of at least 20 ms) while the commands are sent.
echo
echo "== heat2d under an agent, commanded with malleo force: split 2, then merge 1"
$malleo cluster up --nodes 1 --config configs/demo-cluster.json >/dev/null
agent="ipc://$MALLEO_CLUSTER_DIR/n1/agent.sock"
$malleo --agent "$agent" run -n 2 --max 4 --profile-dir "$out" -- $heat2d --iterations 400 --pace 20 \
  --progress 100 >"$out/commanded.txt" 2>&1 &
run=$!
app=""
for _ in $(seq 1 100); do  # until the program's first poll has marked it malleable at the agent
  app=$($malleo --agent "$agent" apps --json |
    python3 -c 'import json, sys; print(next((a["id"] for a in json.load(sys.stdin)["apps"] if a["malleable"]), ""))')
  [ -n "$app" ] && break
  sleep 0.1
done
if [ -z "$app" ]; then
  echo "== the program never reached the agent"; wait "$run" || true; exit 1
fi
$malleo --agent "$agent" force "$app" split 2 --wait 30
$malleo --agent "$agent" force "$app" merge 1 --wait 30
wait "$run"
grep -v -e '^malleo: ' -e '^malleo-pmpi: ' "$out/commanded.txt"
$malleo run -n 2 --profile-dir "$out" -- $heat2d --iterations 400 2>&1 | grep '^checksum' >"$out/static400.txt"
a=$(grep '^checksum' "$out/commanded.txt"); b=$(cat "$out/static400.txt")
if [ -n "$a" ] && [ "$a" = "$b" ]; then
  echo "== same result as a run left alone, bit for bit ($a)"
else
  echo "== results differ: '$a' vs '$b'"
  exit 1
fi
rm -rf "$out"
