#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The full sweep of the scenario regression suite (issue 27): every scenario of sim/scenarios/ (churn_10000 aside)
# over seeds 1-10 with every policy (ios, migration only, static, and sweetspot and swap where the suite compares
# them), the same assertions as the test on the medians, and the Markdown table of medians [min-max] that
# sim/README.md and docs/performance.md show. The registered test (meson test sim_scenarios) runs seeds 1-3 and
# only the baselines its assertions need.
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
