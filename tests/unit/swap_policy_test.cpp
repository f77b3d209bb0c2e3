// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "swap_policy.h"

using namespace malleo::policy;

namespace {

SwapSlot slot(std::uint64_t id, double performance, bool active, double lastChange = 0.0)
{
	/* An unloaded processor of the given speed. */
	return {.id = id,
		.load = {.peakSpeed = performance},
		.active = active,
		.lastChange = lastChange};
}

const SwapParams kParams{.hysteresis = 0.1, .minResidence = 10.0};

/*
 * Two processors X and Y, each with one external CPU hog, and one active
 * process of the application that runs on whichever is active. The active
 * processor's run queue holds the hog and our process. Returns the number of
 * swaps over `steps` decisions, 5 s apart, applying each plan.
 */
int simulateTwoEqualProcessors(bool reportOwnLoad, int steps)
{
	std::vector<SwapSlot> slots = {slot(1, 1.0, true), slot(2, 1.0, false)};
	int swaps = 0;
	for (int step = 1; step <= steps; ++step) {
		double now = 5.0 * step;
		for (SwapSlot &s : slots) {
			double own = s.active ? 1.0 : 0.0;
			s.load.totalLoad = 1.0 + own;
			s.load.ownLoad = reportOwnLoad ? own : 0.0;
		}
		SwapPlan plan = planSwaps(slots, now, kParams);
		for (const SwapPair &pair : plan.swaps) {
			for (SwapSlot &s : slots) {
				if (s.id == pair.deactivate || s.id == pair.activate) {
					s.active = s.id == pair.activate;
					s.lastChange = now;
				}
			}
			++swaps;
		}
	}
	return swaps;
}

} // namespace

TEST_SUITE("swap_policy")
{
	TEST_CASE("performance excludes the application's own load")
	{
		/* Speed 2, run queue 3 of which 1 is ours: 2 other tasks -> 2/3. */
		CHECK(availablePerformance({.peakSpeed = 2.0, .totalLoad = 3.0, .ownLoad = 1.0}) ==
		      doctest::Approx(2.0 / 3.0));
		/* Own load larger than total (sampling skew) counts as idle. */
		CHECK(availablePerformance({.peakSpeed = 2.0, .totalLoad = 0.5, .ownLoad = 1.0}) ==
		      doctest::Approx(2.0));
		/* Without the correction the host of our process looks worse. */
		CHECK(availablePerformance({.peakSpeed = 2.0, .totalLoad = 3.0, .ownLoad = 0.0}) ==
		      doctest::Approx(0.5));
	}

	TEST_CASE("no swap within the hysteresis")
	{
		const SwapSlot slots[] = {slot(1, 1.0, true), slot(2, 1.09, false)};
		SwapPlan plan = planSwaps(slots, 100.0, kParams);
		CHECK(plan.valid);
		CHECK(plan.swaps.empty());
		CHECK(plan.heldByHysteresis);

		/* Exactly 10 % faster is not "more than" 10 %. */
		const SwapSlot edge[] = {slot(1, 1.0, true), slot(2, 1.1, false)};
		CHECK(planSwaps(edge, 100.0, kParams).swaps.empty());
		const SwapSlot above[] = {slot(1, 1.0, true), slot(2, 1.1001, false)};
		CHECK(planSwaps(above, 100.0, kParams).swaps.size() == 1);
	}

	TEST_CASE("swap to a clearly faster processor once its residence time passed")
	{
		std::vector<SwapSlot> slots = {slot(1, 1.0, true, 0.0), slot(2, 2.0, false, 0.0)};
		/* 5 s after the last change: both must stay where they are. */
		SwapPlan plan = planSwaps(slots, 5.0, kParams);
		CHECK(plan.swaps.empty());
		CHECK(plan.heldByResidence == 2);
		/* Exactly R later the residence has elapsed. */
		plan = planSwaps(slots, 10.0, kParams);
		REQUIRE(plan.swaps.size() == 1);
		CHECK(plan.swaps[0].deactivate == 1);
		CHECK(plan.swaps[0].activate == 2);
		CHECK(plan.swaps[0].slowPerformance == doctest::Approx(1.0));
		CHECK(plan.swaps[0].fastPerformance == doctest::Approx(2.0));
		/* One side still held is enough to block the pair. */
		slots[1].lastChange = 8.0;
		CHECK(planSwaps(slots, 10.0, kParams).swaps.empty());
	}

	TEST_CASE("the slowest active processes make way for the fastest inactive ones")
	{
		const SwapSlot slots[] = {slot(1, 0.9, true),  slot(2, 0.2, true),
					  slot(3, 0.5, false), slot(4, 1.0, false),
					  slot(5, 0.3, true),  slot(6, 0.31, false)};
		SwapPlan plan = planSwaps(slots, 100.0, kParams);
		/* Active by speed: 2 (0.2), 5 (0.3), 1 (0.9); inactive: 4 (1.0),
		 * 3 (0.5), 6 (0.31). 2<->4 and 5<->3 clear 10 %; 1 vs 6 does not. */
		REQUIRE(plan.swaps.size() == 2);
		CHECK(plan.swaps[0].deactivate == 2);
		CHECK(plan.swaps[0].activate == 4);
		CHECK(plan.swaps[1].deactivate == 5);
		CHECK(plan.swaps[1].activate == 3);
		CHECK(plan.heldByHysteresis);
		REQUIRE(plan.performance.size() == 6);
		CHECK(plan.performance[1] == doctest::Approx(0.2));
	}

	TEST_CASE("no hot potato between two equally loaded processors")
	{
		/* Counting only other tasks, X and Y look the same: nothing moves. */
		CHECK(simulateTwoEqualProcessors(true, 100) == 0);
		/* The paper's measure (all load) bounces the process back and forth,
		 * once per residence time; this is what the correction prevents. */
		CHECK(simulateTwoEqualProcessors(false, 100) >= 40);
	}

	TEST_CASE("invalid input is reported")
	{
		const SwapSlot bad[] = {{.id = 1, .load = {.peakSpeed = -1.0}, .active = true}};
		CHECK_FALSE(planSwaps(bad, 0.0, kParams).valid);
		const SwapSlot ok[] = {slot(1, 1.0, true)};
		CHECK_FALSE(planSwaps(ok, 0.0, {.hysteresis = -0.1, .minResidence = 0.0}).valid);
		CHECK(planSwaps(ok, 0.0, kParams).valid);
		CHECK(planSwaps({}, 0.0, kParams).swaps.empty());
	}
}
