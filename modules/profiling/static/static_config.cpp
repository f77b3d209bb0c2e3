// SPDX-License-Identifier: Apache-2.0
#include "static_config.h"

#include <cmath>

#include <fmt/format.h>
#include <malleo/config_table.h>
#include <malleo/message.h>

namespace malleo {

namespace {

// One schedule entry: {"at": s, "apw": x, "upw": y}. Either of apw and upw may
// be left out and is then the complement of the other, as in the base table.
std::string parseStep(const nlohmann::json &entry, size_t index, ScheduleStep &step)
{
	std::string name = fmt::format("static.schedule[{}]", index);
	ConfigTable t(entry, name);
	bool haveAt = entry.is_object() && entry.contains("at");
	bool haveApw = entry.is_object() && entry.contains("apw");
	bool haveUpw = entry.is_object() && entry.contains("upw");
	t.number("at", step.at, 0, 1e9);
	t.number("apw", step.apw, 0, 1);
	t.number("upw", step.upw, 0, 1);
	t.finish();
	if (t.error().empty() && !haveAt)
		t.fail("at", "missing (seconds since the first sample)");
	if (t.error().empty() && !haveApw && !haveUpw)
		t.fail("apw", "missing (give apw, upw or both)");
	if (!haveUpw)
		step.upw = 1.0 - step.apw;
	if (!haveApw)
		step.apw = 1.0 - step.upw;
	return t.error();
}

} // namespace

std::string parseStaticConfig(const nlohmann::json &table, StaticConfig &config)
{
	StaticConfig c; // defaults, not the previous configuration: a reload is a new node
	nlohmann::json rest = table;
	ConfigTable t(rest, "static");
	// The schedule is a list of tables, which ConfigTable does not read.
	nlohmann::json schedule = nlohmann::json::array();
	if (rest.is_object() && rest.contains("schedule")) {
		schedule = rest["schedule"];
		rest.erase("schedule");
		if (!schedule.is_array())
			t.fail("schedule",
			       fmt::format("expected a list of {{\"at\", \"apw\", \"upw\"}} "
					   "tables, got {}",
					   schedule.dump()));
	}

	bool haveUpw = rest.is_object() && rest.contains("upw");
	// Peers refuse a profile above kProfilePowerMax: a larger one would start an agent no peer listens to.
	t.number("pw", c.base.pw, 0, kProfilePowerMax);
	if (t.error().empty() && !(c.base.pw > 0))
		t.fail("pw", "must be greater than 0");
	t.number("apw", c.base.apw, 0, 1);
	t.number("upw", c.base.upw, 0, 1);
	t.integer("cores", c.base.cores, 1, 1 << 20);
	t.number("ctxsw_rate", c.base.ctxswRate, 0, 1e12);
	t.number("sigma", c.base.sigma, 0, 1);
	t.finish();
	if (!t.error().empty())
		return t.error();
	if (!haveUpw)
		c.base.upw = 1.0 - c.base.apw;
	c.base.processes = 0;

	if (schedule.is_array()) {
		for (size_t i = 0; i < schedule.size(); ++i) {
			ScheduleStep step;
			if (std::string err = parseStep(schedule[i], i, step); !err.empty())
				return err;
			// Sorted on input rather than here: an out-of-order step is more
			// likely a typo in `at` than an intention.
			if (!c.schedule.empty() && !(step.at > c.schedule.back().at))
				return fmt::format(
				    "config key 'static.schedule[{}].at': {} is not after "
				    "the previous step's {}",
				    i, step.at, c.schedule.back().at);
			c.schedule.push_back(step);
		}
	}
	config = std::move(c);
	return {};
}

NodeProfile profileAt(const StaticConfig &config, double elapsed)
{
	NodeProfile p = config.base;
	for (const ScheduleStep &step : config.schedule) {
		if (step.at > elapsed)
			break;
		p.apw = step.apw;
		p.upw = step.upw;
	}
	return p;
}

} // namespace malleo
