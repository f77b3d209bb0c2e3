// SPDX-License-Identifier: Apache-2.0
// The "static" module's table: a node's numbers given rather than measured,
// with an optional schedule of load changes.
#pragma once

#include <string>
#include <vector>

#include <malleo/profile.h>
#include <nlohmann/json.hpp>

namespace malleo {

// From `at` seconds after the first sample on, the node reports apw and upw.
struct ScheduleStep {
	double at = 0.0;
	double apw = 1.0;
	double upw = 0.0;
};

struct StaticConfig {
	NodeProfile base;		    // pw, apw, upw, sigma, ctxswRate, cores
	std::vector<ScheduleStep> schedule; // strictly increasing `at`
};

// Reads the table strictly. Returns an empty string or one line naming the key
// (schedule entries as `schedule[i].key`); `config` is changed only on success.
std::string parseStaticConfig(const nlohmann::json &table, StaticConfig &config);

// The profile `elapsed` seconds after the first sample: the base values with
// apw and upw of the last step whose `at` has passed.
NodeProfile profileAt(const StaticConfig &config, double elapsed);

} // namespace malleo
