// SPDX-License-Identifier: Apache-2.0
// What an agent knows of the MPI applications on its node, as decision modules see it.
//
// Processes register with their local agent and report deltas (iteration
// times, bytes exchanged, CPU share); the core keeps this registry and hands a
// read-only copy to the decision module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace malleo {

struct ProcessInfo {
	uint32_t rank = 0;
	int64_t pid = 0;
	int64_t units = 1;	  // data units it holds (the smallest process holds 1)
	bool active = true;	  // false: a parked spare of an over-allocated application
	double lastChange = 0.0;  // agent clock: when it last became active or parked
	double bytesLocal = 0.0;  // bytes per iteration exchanged with processes on this node
	double bytesRemote = 0.0; // bytes per iteration exchanged with processes elsewhere
	double ownLoad = 0.0;	  // the node's cores this process used: 1 for one busy (on a slice, of the slice)
};

// One measured configuration of an application: its size and iteration time.
struct IterationSample {
	int64_t processes = 0;
	double seconds = 0.0;
};

struct ApplicationInfo {
	std::string id;
	bool malleable = false;
	std::string rootAgent;		  // the agent hosting rank 0: reconfigurations go through it
	int64_t totalProcesses = 0;	  // active processes of the whole application
	int64_t totalUnits = 0;		  // data units of the whole application
	std::vector<ProcessInfo> local;	  // this node's processes, by rank
	std::vector<IterationSample> sizes; // one per configuration measured, oldest first
	double redistributionCost = 0.0;  // seconds the last resize cost (0: not measured yet)
	int64_t remainingIterations = -1; // -1: unknown
	double lastReconfiguration = -1.0; // agent clock; -1: never
	double lastSplit = -1.0;	  // agent clock; -1: never
};

} // namespace malleo
