#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The full sweep of the scenario regression suite (issue 27): every scenario of sim/scenarios/ over seeds 1-10 with
# every policy (ios, sweetspot, migration only, static, swap; the churn scenarios ios, migration only and static),
# the same assertions as the test on the medians, and the Markdown table of medians [min-max] that sim/README.md
# and docs/performance.md show. The registered test (meson test sim_scenarios) runs the same seeds with only the
# policies its assertions compare, and leaves churn_10000 to this sweep (sim/README.md says why).
# MALLEO_SIM_ONLY=heterogeneous,churn_1000 picks scenarios.
#
#   bench/sim_scenarios.sh [BUILD_DIR] [SEEDS]
#   bench/sim_scenarios.sh build 1-10
set -eu
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
sim="$build/sim/malleo-sim"
[ -x "$sim" ] || { echo "sim_scenarios.sh: no $sim: build the malleo-sim target first" >&2; exit 2; }
MALLEO_SIM="$sim" MALLEO_SIM_SCENARIOS="$root/sim/scenarios" MALLEO_SIM_SEEDS="${2:-1-10}" \
	exec /usr/bin/python3 "$root/tests/sim/scenario_suite.py" --sweep
