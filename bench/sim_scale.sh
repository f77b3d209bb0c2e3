#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The simulator at scale: the churn scenario at 10, 100, 1,000 and 10,000
# nodes (1 % of the nodes leave and as many join every 5 s, three times),
# with the ios decision module and no baselines. For each size: the wall time
# of a run, messages per agent per second, and after a join the time to the
# first answer to the joiner's work request (and its hops) and to its first
# process. Prints a Markdown table of medians over the repeats.
#
#   bench/sim_scale.sh [BUILD_DIR] [REPEATS] [SIZES]
#   bench/sim_scale.sh build-sim 3 "10 100 1000 10000"
set -eu
build=${1:-build}
repeats=${2:-3}
sizes=${3:-"10 100 1000 10000"}
root=$(cd "$(dirname "$0")/.." && pwd)
sim="$build/sim/malleo-sim"
[ -x "$sim" ] || { echo "sim_scale.sh: no $sim: build the malleo-sim target first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for n in $sizes; do
	# The churn of churn_1000.json, scaled: 1 % of the nodes, at least one.
	/usr/bin/python3 - "$root/sim/scenarios/churn_1000.json" "$n" "$tmp/churn_$n.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
doc["name"] = f"churn_{n}"
doc["nodes"] = n
for e in doc["events"]:
    for k in ("join", "leave"):
        if k in e:
            e[k] = max(1, n // 100)
json.dump(doc, open(sys.argv[3], "w"))
PY
	for r in $(seq "$repeats"); do
		start=$(date +%s.%N)
		"$sim" --scenario "$tmp/churn_$n.json" --decision ios --baselines none --seed "$r" --json \
			> "$tmp/out_${n}_$r.json" 2>/dev/null
		end=$(date +%s.%N)
		echo "$start $end" > "$tmp/wall_${n}_$r"
	done
done

/usr/bin/python3 - "$tmp" "$repeats" $sizes <<'PY'
import json, os, statistics, sys
tmp, repeats, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)
print("| nodes | wall s | messages / agent / s | join → WRM answered, s | hops | join → first process, s | joins answered |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for n in sizes:
    walls, rates, reply, hops, work, answered = [], [], [], [], [], []
    for r in range(1, repeats + 1):
        start, end = map(float, open(os.path.join(tmp, f"wall_{n}_{r}")).read().split())
        run = json.load(open(os.path.join(tmp, f"out_{n}_{r}.json")))["runs"][0]
        walls.append(end - start)
        rates.append(run["messages_per_agent_second"])
        reply.append(run["join_to_reply_median"])
        hops.append(run["reply_hops_median"])
        work.append(run["join_to_work_median"])
        answered.append(f'{run["join_replies"]}/{run["late_joins"]}')
    print(f"| {n} | {fmt(med(walls), '.1f')} | {fmt(med(rates))} | {fmt(med(reply))} | {fmt(med(hops), '.1f')} "
          f"| {fmt(med(work))} | {answered[len(answered) // 2]} |")
PY
