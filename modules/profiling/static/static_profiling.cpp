// SPDX-License-Identifier: Apache-2.0
// Profiling module "static": reports the numbers it is given, so several agents
// on one machine can play nodes of different power and load, and tests and the
// simulator get a node whose load changes on a known schedule.
//
// Options (table "static"):
//   pw          1.0        processing power, > 0
//   apw         1.0        available fraction of the CPU, 0 to 1
//   upw         1 − apw    used fraction of the CPU, 0 to 1
//   cores       1          CPUs of the node
//   ctxsw_rate  0          context switches per second
//   sigma       0          σ_i, reported as given (the schedule does not change it)
//   schedule    []         steps {"at": seconds, "apw": x, "upw": y}, `at` strictly
//                          increasing and counted from the first sample; a step
//                          without upw (or apw) uses the complement of the other
//
//   {"static": {"pw": 3.0, "cores": 4, "apw": 1.0,
//               "schedule": [{"at": 30, "apw": 0.25}, {"at": 90, "apw": 1.0}]}}
#include "static_profiling.h"

namespace malleo {

std::string StaticProfiling::configure(const nlohmann::json &table)
{
	return parseStaticConfig(table, config_);
}

std::string StaticProfiling::start()
{
	firstSample_.reset();
	return {};
}

NodeProfile StaticProfiling::sample(double now)
{
	// Counting from the first sample rather than from start() keeps the
	// schedule independent of how long the agent took to come up.
	if (!firstSample_)
		firstSample_ = now;
	return profileAt(config_, now - *firstSample_);
}

nlohmann::json StaticProfiling::describe() const
{
	nlohmann::json schedule = nlohmann::json::array();
	for (const ScheduleStep &s : config_.schedule)
		schedule.push_back({{"at", s.at}, {"apw", s.apw}, {"upw", s.upw}});
	const NodeProfile &b = config_.base;
	return {
	    {"module", "static"}, {"pw", b.pw},		  {"apw", b.apw},
	    {"upw", b.upw},	  {"cores", b.cores},	  {"ctxsw_rate", b.ctxswRate},
	    {"sigma", b.sigma},	  {"schedule", schedule},
	};
}

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Profiling, "static", "0.1.0", malleo::StaticProfiling)
