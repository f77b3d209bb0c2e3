// SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "sweet_spot_policy.h"

using namespace malleo::policy;

namespace {

/* A strong-scaling curve with a known minimum at p* = sqrt(a/b). */
struct Curve {
	double a = 1000.0;
	double b = 1.0;
	double operator()(std::int64_t p) const
	{
		return a / static_cast<double>(p) + b * static_cast<double>(p);
	}
};

struct Run {
	std::vector<SizeSample> history;
	std::vector<SizeDecision> decisions;
};

/* Drive the policy as the sweet-spot module would: measure at the current
 * size, decide, apply, for a fixed number of resize points. */
Run drive(const Curve &t, std::int64_t start, const SweetSpotParams &params, int points,
	  double growCost = 0.0)
{
	Run run;
	std::int64_t p = start;
	for (int k = 0; k < points; ++k) {
		run.history.push_back({p, t(p)});
		SweetSpotInput in{run.history, 1000, growCost, 0.0};
		SizeDecision d = decideSize(in, params);
		run.decisions.push_back(d);
		p = d.target;
	}
	return run;
}

} // namespace

TEST_SUITE("sweetspot_policy")
{
	TEST_CASE("slope: a line through two sizes, a quadratic through three")
	{
		/* Two sizes: the line through (ln p, ln T). 4 -> 8 and 10 -> 6 s:
		 * e = -ln(0.6)/ln(2) = 0.737, dT/dp = -e * 6 / 8. */
		const SizeSample two[] = {{4, 10.0}, {8, 6.0}};
		SizeModel m = fitSlope(two);
		CHECK(m.points == 2);
		const double e = -std::log(0.6) / std::log(2.0);
		CHECK(m.normalizedSlope == doctest::Approx(e));
		CHECK(m.slope == doctest::Approx(-e * 6.0 / 8.0));

		/* Three sizes: ln T = 5 - 0.9 ln p + 0.05 (ln p)^2 is a quadratic in
		 * ln p, so the interpolant is exact: e(12) = 0.9 - 0.1 ln 12. */
		auto q = [](double p) {
			double x = std::log(p);
			return std::exp(5 - 0.9 * x + 0.05 * x * x);
		};
		const SizeSample three[] = {{4, q(4)}, {8, q(8)}, {12, q(12)}};
		m = fitSlope(three);
		CHECK(m.points == 3);
		CHECK(m.normalizedSlope == doctest::Approx(0.9 - 0.1 * std::log(12.0)));
		CHECK(m.slope == doctest::Approx(-m.normalizedSlope * q(12) / 12));

		/* Repeated sizes count once, with their latest time; the order
		 * they were visited in does not matter to the interpolant. */
		const SizeSample repeated[] = {
		    {8, 99.0}, {4, q(4)}, {12, q(12)}, {8, q(8)}, {12, q(12)}};
		CHECK(fitSlope(repeated).normalizedSlope == doctest::Approx(m.normalizedSlope));

		const SizeSample one[] = {{4, 10.0}};
		CHECK(fitSlope(one).points == 0);
	}

	TEST_CASE("perfect scaling has normalized slope 1 at any size")
	{
		for (std::int64_t p : {2, 64, 4096}) {
			const SizeSample s[] = {
			    {p, 1.0 / p}, {2 * p, 0.5 / p}, {3 * p, 1.0 / (3.0 * p)}};
			CHECK(fitSlope(s).normalizedSlope == doctest::Approx(1.0));
		}
	}

	TEST_CASE("growth stops near the sweet spot of a/p + b*p")
	{
		Curve t;
		const double best = t(32); /* p* = 31.6 */
		Run run = drive(t, 4, {.slopeThreshold = 0.2, .step = 4, .maxProcessors = 128}, 20);
		std::int64_t final = run.history.back().processors;
		/* e(p) = (a/p^2 - b)/(a/p^2 + b) drops below 0.2 at p = 25.8: the
		 * model says 0.277 at 24 (grow) and 0.125 at 28 (stay). */
		CHECK(final == 28);
		CHECK(t(final) <= best * 1.01);
		/* It settled: the last several decisions are all "stay". */
		for (std::size_t k = run.decisions.size() - 5; k < run.decisions.size(); ++k)
			CHECK(run.decisions[k].action == SizeAction::Stay);
		CHECK(run.decisions.front().reason == SizeReason::FirstProbe);
		CHECK(run.decisions.back().reason == SizeReason::FlatSlope);
		/* Monotone growth on the way up: never a shrink with threshold 0.2. */
		for (const SizeDecision &d : run.decisions)
			CHECK(d.action != SizeAction::Shrink);
	}

	TEST_CASE("a growth that did not pay is undone, and not retried")
	{
		/* Threshold 0 grows while any improvement is predicted: 8, 16, 24, 32,
		 * then 40 (t = 65 > t(32) = 63.25) is a loss and goes back to 32. */
		Curve t;
		Run run = drive(t, 8, {.slopeThreshold = 0.0, .step = 8, .maxProcessors = 128}, 12);
		std::vector<std::int64_t> sizes;
		for (const SizeSample &s : run.history)
			sizes.push_back(s.processors);
		REQUIRE(sizes.size() >= 7);
		CHECK(sizes[0] == 8);
		CHECK(sizes[3] == 32);
		CHECK(sizes[4] == 40);
		CHECK(sizes[5] == 32);
		CHECK(run.decisions[4].action == SizeAction::Shrink);
		CHECK(run.decisions[4].reason == SizeReason::GrowthDidNotPay);
		CHECK(run.decisions[4].gainPerIteration == doctest::Approx(t(40) - t(32)));
		for (std::size_t k = 5; k < sizes.size(); ++k)
			CHECK(sizes[k] == 32);
	}

	TEST_CASE("a large redistribution cost suppresses a resize")
	{
		Curve t;
		/* First probe from 4 to 8 at most saves t(4)/2 = 126 s per
		 * iteration, 126,000 s over 1000 iterations. */
		Run cheap =
		    drive(t, 4, {.slopeThreshold = 0.2, .step = 4, .maxProcessors = 128}, 1, 1e5);
		CHECK(cheap.decisions[0].action == SizeAction::Grow);
		Run dear =
		    drive(t, 4, {.slopeThreshold = 0.2, .step = 4, .maxProcessors = 128}, 3, 1e6);
		CHECK(dear.decisions[0].action == SizeAction::Stay);
		CHECK(dear.decisions[0].reason == SizeReason::CostExceedsGain);
		CHECK(dear.decisions[0].horizonGain == doctest::Approx(1000 * t(4) / 2));
		CHECK(dear.history.back().processors == 4);

		/* Shrinking back is weighed the same way. */
		const SizeSample h[] = {{16, 10.0}, {20, 10.5}};
		SweetSpotParams params{.slopeThreshold = 0.2, .step = 4, .maxProcessors = 64};
		SizeDecision d = decideSize({h, 10, 0.0, 100.0}, params);
		CHECK(d.action == SizeAction::Stay);
		CHECK(d.reason == SizeReason::CostExceedsGain);
		d = decideSize({h, 1000, 0.0, 100.0}, params);
		CHECK(d.action == SizeAction::Shrink);
		CHECK(d.target == 16);
	}

	TEST_CASE("the remaining iterations decide: the same growth pays early in a run and not "
		  "near its end")
	{
		/* One size measured, 1 process at 0.02 s: the first probe to 2 saves at most 0.01 s
		 * an iteration (linear speed-up). Against a 2 s resize that pays over more than 200
		 * iterations and not over fewer. */
		const SizeSample h[] = {{1, 0.02}};
		SweetSpotParams params{.slopeThreshold = 0.2, .step = 1, .maxProcessors = 8};
		SizeDecision early = decideSize({h, 450, 2.0, 2.0}, params);
		CHECK(early.action == SizeAction::Grow);
		CHECK(early.target == 2);
		CHECK(early.horizonGain == doctest::Approx(4.5));
		CHECK(early.declined == SizeAction::Stay);
		SizeDecision late = decideSize({h, 150, 2.0, 2.0}, params);
		CHECK(late.action == SizeAction::Stay);
		CHECK(late.reason == SizeReason::CostExceedsGain);
		CHECK(late.horizonGain == doctest::Approx(1.5));
		CHECK(late.declined == SizeAction::Grow);
		CHECK(late.declinedTarget == 2);
		CHECK(late.target == 1);
		/* Equal is not a gain: the resize would only pay for itself. */
		SizeDecision even = decideSize({h, 200, 2.0, 2.0}, params);
		CHECK(even.action == SizeAction::Stay);
		CHECK(even.declined == SizeAction::Grow);
		/* The last iteration gains nothing whatever the cost. */
		CHECK(decideSize({h, 0, 0.0, 0.0}, params).action == SizeAction::Stay);
		/* A shrink back stopped by its cost says so too. */
		const SizeSample grown[] = {{16, 10.0}, {20, 10.5}};
		SizeDecision back = decideSize({grown, 10, 0.0, 100.0}, params);
		CHECK(back.declined == SizeAction::Shrink);
		CHECK(back.declinedTarget == 16);
	}

	TEST_CASE("no room to grow, and invalid input")
	{
		const SizeSample h[] = {{4, 100.0}};
		SizeDecision d = decideSize({h, 100, 0.0, 0.0}, {.step = 4, .maxProcessors = 6});
		CHECK(d.action == SizeAction::Stay);
		CHECK(d.reason == SizeReason::NoRoomToGrow);

		CHECK(decideSize({{}, 100, 0.0, 0.0}, {.step = 4, .maxProcessors = 64}).reason ==
		      SizeReason::InvalidInput);
		const SizeSample bad[] = {{4, -1.0}};
		CHECK(decideSize({bad, 100, 0.0, 0.0}, {.step = 4, .maxProcessors = 64}).reason ==
		      SizeReason::InvalidInput);
		CHECK(decideSize({h, 100, 0.0, 0.0}, {.step = 0, .maxProcessors = 64}).reason ==
		      SizeReason::InvalidInput);
	}
}
