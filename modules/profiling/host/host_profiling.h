// SPDX-License-Identifier: Apache-2.0
// Profiling module "host": this node's CPUs as /proc/stat and hwloc see them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <malleo/profiling_module.h>

#include "calibration.h"
#include "cgroup_cpu.h"
#include "host_config.h"
#include "proc_stat.h"
#include "stability.h"

namespace malleo {

class HostProfiling : public ProfilingModule
{
public:
	std::string configure(const nlohmann::json &table) override;
	std::string start() override;
	NodeProfile sample(double now) override;
	nlohmann::json describe() const override;

	// The CPUs measured, resolved by start(): the configured list or the affinity.
	const std::vector<int> &cpus() const { return cpus_; }

private:
	std::string readProcStat(ProcStat &out) const;
	NodeProfile sampleSlice(double now, ProcStat current, uint64_t usage);

	HostConfig config_;
	std::vector<int> cpus_;
	double pw_ = 1.0;
	std::optional<Calibration> calibration_;
	nlohmann::json topology_;
	StabilityWindow window_;
	std::optional<CpuSlice> slice_;     // host.cgroup: the node is this slice
	uint64_t previousUsage_ = 0;	    // the slice's usage counter at the previous sample
	std::optional<ProcStat> previous_; // the reading the next sample measures from
	double previousTime_ = 0.0;
	NodeProfile profile_;
	std::string lastError_;
};

// The CPUs this process may run on (sched_getaffinity), in increasing order.
// Returns an empty string or why they cannot be known.
std::string affinityCpus(std::vector<int> &cpus);

} // namespace malleo
