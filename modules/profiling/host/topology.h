// SPDX-License-Identifier: Apache-2.0
// The node's hardware as hwloc sees it, summarised for `malleo status`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace malleo {

// Refuses an hwloc library whose API major differs from the headers we were
// built with: the object types and topology layout changed between 1.x and 2.x.
// Returns an empty string or one line naming both versions.
std::string checkHwlocVersion(unsigned runtimeApiVersion);

// Loads the topology from `xmlPath`, or from the machine when it is empty, and
// fills `out` with counts of packages, cores, PUs, NUMA nodes and L1–L3 caches,
// and where the CPUs of `cpus` (OS numbers) sit in it. Returns an empty string
// or one line saying what failed.
std::string describeTopology(const std::string &xmlPath, const std::vector<int> &cpus,
			     nlohmann::json &out);

} // namespace malleo
