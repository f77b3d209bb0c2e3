// SPDX-License-Identifier: Apache-2.0
#include "swap_policy.h"

#include <algorithm>
#include <cmath>

/*
 * Seed 002 ran with "the inverse of the CPU load" as performance, no
 * hysteresis and no memory, and saw processes bounce between two equally
 * loaded processors: the process itself raises the load of the processor it
 * runs on, so the other one always looks better. Three changes stop that:
 *
 *  - Performance excludes the application's own load. A CPU-bound process
 *    arriving on a processor with L other runnable tasks gets 1/(1 + L) of
 *    it, so we rate a processor peakSpeed / (1 + max(0, total - own)): the
 *    same number whether or not our process is the one running there.
 *  - Hysteresis: an inactive processor replaces an active one only if it is
 *    faster by more than the fraction h; measurement noise cannot swap.
 *  - Minimum residence: a process that changed state less than R seconds ago
 *    keeps it, which bounds the swap rate even under a bad measure.
 *
 * Pairing: among processes free to change, the slowest active goes out for
 * the fastest inactive, then the next two, while the pair clears the
 * hysteresis. Both lists are sorted, so the first pair that fails ends it.
 */

namespace malleo::policy {

namespace {

bool validSlot(const SwapSlot &slot)
{
	const ProcessorLoad &l = slot.load;
	return std::isfinite(l.peakSpeed) && l.peakSpeed >= 0.0 && std::isfinite(l.totalLoad) &&
	       l.totalLoad >= 0.0 && std::isfinite(l.ownLoad) && l.ownLoad >= 0.0 &&
	       std::isfinite(slot.lastChange);
}

} // namespace

double availablePerformance(const ProcessorLoad &load)
{
	double external = std::max(0.0, load.totalLoad - load.ownLoad);
	return load.peakSpeed / (1.0 + external);
}

SwapPlan planSwaps(std::span<const SwapSlot> slots, double now, const SwapParams &params)
{
	SwapPlan plan;
	if (!std::isfinite(now) || !(params.hysteresis >= 0.0) || !(params.minResidence >= 0.0) ||
	    !std::all_of(slots.begin(), slots.end(), validSlot))
		return plan;
	plan.valid = true;

	std::vector<std::size_t> active;
	std::vector<std::size_t> inactive;
	for (std::size_t k = 0; k < slots.size(); ++k) {
		plan.performance.push_back(availablePerformance(slots[k].load));
		if (now - slots[k].lastChange < params.minResidence) {
			++plan.heldByResidence;
			continue;
		}
		(slots[k].active ? active : inactive).push_back(k);
	}

	/* Stable sorts: equal performance keeps the caller's order, so the plan
	 * is the same on every agent that sees the same inputs. */
	const std::vector<double> &perf = plan.performance;
	std::stable_sort(active.begin(), active.end(),
			 [&](std::size_t a, std::size_t b) { return perf[a] < perf[b]; });
	std::stable_sort(inactive.begin(), inactive.end(),
			 [&](std::size_t a, std::size_t b) { return perf[a] > perf[b]; });

	std::size_t pairs = std::min(active.size(), inactive.size());
	for (std::size_t k = 0; k < pairs; ++k) {
		double slow = perf[active[k]];
		double fast = perf[inactive[k]];
		if (!(fast > slow * (1.0 + params.hysteresis))) {
			plan.heldByHysteresis = true;
			break;
		}
		plan.swaps.push_back({slots[active[k]].id, slots[inactive[k]].id, slow, fast});
	}
	return plan;
}

} // namespace malleo::policy
