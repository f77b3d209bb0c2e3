// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace malleo::policy {

// MPI process swapping (seed 002): an application over-allocated with more
// processes than it runs keeps the active ones on the fastest processors,
// without the hot-potato swapping the paper observed.

/* What the profiler says about the processor a process sits on. Loads are
 * run-queue lengths (as uptime/loadavg report them). */
struct ProcessorLoad {
	double peakSpeed = 1.0; // per-core speed when unloaded
	double totalLoad = 0.0; // everything runnable on it, the application included
	double ownLoad = 0.0;	// the application's own part of totalLoad
};

/* One process of the application and the processor it sits on. */
struct SwapSlot {
	std::uint64_t id = 0;
	ProcessorLoad load;
	bool active = false;
	double lastChange = 0.0; // seconds: when it last became active or inactive
};

struct SwapParams {
	double hysteresis = 0.1;    // swap only if faster by more than this fraction
	double minResidence = 30.0; // seconds a process stays active or inactive
};

struct SwapPair {
	std::uint64_t deactivate = 0;
	std::uint64_t activate = 0;
	double slowPerformance = 0.0;
	double fastPerformance = 0.0;
};

struct SwapPlan {
	bool valid = false;
	std::vector<SwapPair> swaps;	 // slowest active paired with fastest inactive first
	std::vector<double> performance; // per slot, in input order
	std::size_t heldByResidence = 0; // slots that could not change yet
	bool heldByHysteresis = false;	 // the best remaining pair was too close to swap
};

double availablePerformance(const ProcessorLoad &load);
SwapPlan planSwaps(std::span<const SwapSlot> slots, double now, const SwapParams &params);

} // namespace malleo::policy
