// SPDX-License-Identifier: Apache-2.0
// The "host" module's table of the configuration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace malleo {

struct HostConfig {
	std::vector<int> cpus;	  // empty: the agent's own CPU affinity
	std::optional<double> pw; // empty: calibrate at start()
	int calibrationMs = 100;
	int stabilityWindow = 10;
	std::string procStat = "/proc/stat";
	// false: niced processes' time counts as available, not used: they yield the CPU to the
	// application's processes (a nice 10 task gets about a tenth of a core beside a nice 0
	// one), as background builds do.
	bool nicedIsLoad = true;
	// Not empty: the node is the CPU slice of this cgroup (v1; "self": the agent's own), measured against its
	// quota (cgroup_cpu.h) instead of /proc/stat's CPUs.
	std::string cgroup;
	std::string cgroupRoot = "/sys/fs/cgroup";
};

// Reads the table strictly: unknown keys, wrong types and values out of range
// are errors. Returns an empty string or one line naming the key; `config` is
// changed only on success.
std::string parseHostConfig(const nlohmann::json &table, HostConfig &config);

} // namespace malleo
