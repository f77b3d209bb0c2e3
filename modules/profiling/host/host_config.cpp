// SPDX-License-Identifier: Apache-2.0
#include "host_config.h"

#include <algorithm>

#include <fmt/format.h>
#include <malleo/config_table.h>
#include <malleo/message.h>

namespace malleo {

namespace {

// Linux numbers CPUs below CONFIG_NR_CPUS, at most 8192 today; the bound only
// stops a typo from becoming a huge CPU number.
constexpr int kMaxCpu = 1 << 16;

} // namespace

std::string parseHostConfig(const nlohmann::json &table, HostConfig &config)
{
	HostConfig c = config;
	// ConfigTable knows neither a list of integers nor a nullable number, so
	// those two keys are read here and removed before it sees the rest.
	nlohmann::json rest = table;
	ConfigTable t(rest, "host");
	if (rest.is_object()) {
		if (auto it = rest.find("cpus"); it != rest.end()) {
			const nlohmann::json &v = *it;
			bool ok = v.is_array() && !v.empty();
			std::vector<int> cpus;
			for (size_t i = 0; ok && i < v.size(); ++i) {
				ok = v[i].is_number_integer() && v[i].get<int64_t>() >= 0 &&
				     v[i].get<int64_t>() < kMaxCpu;
				if (ok)
					cpus.push_back(v[i].get<int>());
			}
			std::sort(cpus.begin(), cpus.end());
			if (!ok)
				t.fail("cpus",
				       fmt::format("expected a non-empty list of CPU numbers "
						   "(integers 0 to {}), got {}",
						   kMaxCpu - 1, v.dump()));
			else if (std::adjacent_find(cpus.begin(), cpus.end()) != cpus.end())
				t.fail("cpus",
				       fmt::format("CPU {} is listed twice",
						   *std::adjacent_find(cpus.begin(), cpus.end())));
			c.cpus = std::move(cpus);
			rest.erase("cpus");
		}
		if (auto it = rest.find("pw"); it != rest.end()) {
			if (it->is_null()) {
				c.pw.reset();
				rest.erase("pw");
			} else {
				double pw = 0;
				// Peers refuse a profile above kProfilePowerMax: a larger one would start an agent no peer listens to.
				t.number("pw", pw, 0, kProfilePowerMax);
				if (t.error().empty() && !(pw > 0))
					t.fail("pw",
					       "must be greater than 0 (or null to calibrate)");
				c.pw = pw;
			}
		}
	}
	t.integer("calibration_ms", c.calibrationMs, 1, 10000);
	t.integer("stability_window", c.stabilityWindow, 2, 10000);
	t.string("proc_stat", c.procStat);
	t.boolean("niced_is_load", c.nicedIsLoad);
	t.string("cgroup", c.cgroup, true);
	t.string("cgroup_root", c.cgroupRoot);
	t.finish();
	if (!t.error().empty())
		return t.error();
	config = std::move(c);
	return {};
}

} // namespace malleo
