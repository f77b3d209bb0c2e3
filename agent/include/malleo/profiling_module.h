// SPDX-License-Identifier: Apache-2.0
// Profiling modules: what this node looks like.
//
// A profiling module is the one kind that touches the machine (hwloc, /proc):
// the daemon calls sample() on its own clock and feeds the result to the core as
// an input, so the core stays pure and the simulator substitutes its own samples.
#pragma once

#include <malleo/module.h>
#include <malleo/profile.h>

namespace malleo {

class ProfilingModule : public Module
{
public:
	// Called once before the first sample, after configure(). May take a short
	// time (a calibration). Returns an empty string or one line saying what failed.
	virtual std::string start() = 0;

	// The node's profile now. `now` is seconds on the agent's monotonic clock.
	virtual NodeProfile sample(double now) = 0;

	// A description of the node (topology, CPU set) for `malleo status`. A number under `cpu_cores` is the
	// machine's CPU time a second the node may use, in cores, when that is not its profile's `cores` (a CPU
	// slice's quota, 0.25 for a node of 1 core): the agent converts the processes' CPU shares, measured in the
	// machine's cores, into the node's with it.
	virtual nlohmann::json describe() const = 0;
};

} // namespace malleo
