// SPDX-License-Identifier: Apache-2.0
// What a simulator run writes: a CSV per policy, one row per iteration; the
// summary as a table or JSON; SVG plots. Nothing here depends on the wall
// clock, so the same seed gives byte-identical files.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulation.h"

namespace malleo::sim {

struct RunSet {
	std::string scenario;
	uint64_t seed = 0;
	int64_t nodes = 0;
	std::vector<RunResult> runs; // the policy under test first
};

std::string iterationsCsv(const RunResult &run);
nlohmann::json summaryJson(const RunSet &set);
std::string summaryTable(const RunSet &set);

// Iteration time and active processes per iteration, one line per policy.
std::string iterationPlotSvg(const RunSet &set);
std::string processPlotSvg(const RunSet &set);

double median(std::vector<double> values); // NaN for none

} // namespace malleo::sim
