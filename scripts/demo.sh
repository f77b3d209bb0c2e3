#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, builds and shows a virtual cluster of malleo agents on this machine:
# they join, exchange profiles and pass work-stealing requests while a real CPU
# hog loads one CPU. Ctrl-C (or the end of DURATION seconds) stops everything.
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
