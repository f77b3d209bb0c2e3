// SPDX-License-Identifier: Apache-2.0
#include "sweet_spot_policy.h"

#include <algorithm>
#include <array>
#include <cmath>

/*
 * ReSHAPE (seed 003, 3.1.5) fits a quadratic through the iteration times of the
 * last three sizes (a line through two), takes its slope at the current size
 * and grows while "the slope exceeds a pre-determined threshold (currently
 * 0.2)". The paper does not say what the slope is normalized by, and a raw
 * dT/dp in seconds per processor cannot be compared with a unitless 0.2. We
 * use the elasticity
 *
 *     e = -(dT/dp) * p / T
 *
 * the relative time saved per relative processor added: e = 1 is perfect
 * scaling (T ~ 1/p), e = 0.2 means a 10 % larger allocation saves 2 % of the
 * time, i.e. the added processors work at 20 % parallel efficiency. Unlike
 * the per-processor form -(dT/dp)/T, which for a perfectly scaling code is
 * 1/p and would stop growth at p = 5 whatever the code, e does not depend on
 * the scale of p, so one threshold fits every size.
 *
 * e is the slope of ln T against ln p, so we interpolate there: the quadratic
 * through (ln p, ln T) of the last three sizes, its derivative at the current
 * size. In plain (p, T) a quadratic through a convex curve has a biased slope
 * at its newest end: for T = 1/p at p = 2, 4, 6 it says dT/dp = 0 at 6, i.e.
 * that a perfectly scaling code has stopped scaling, and growth stalls far
 * before the sweet spot. In log-log a power law is a straight line, so perfect
 * scaling gives e = 1 exactly, and a/p + b*p is matched to within a few per
 * cent (see the unit tests).
 *
 * Decisions, in order:
 *  1. The last resize was a growth and T did not improve (by minImprovement):
 *     shrink back to the previous size (seed 003, 4.1.1: "contracted back to
 *     its most recent configuration").
 *  2. Only one size seen: probe one step up (ReSHAPE grows a job not yet
 *     expanded), predicting at most linear speed-up.
 *  3. Otherwise grow while e > threshold, unless the next size was already
 *     measured no faster than the current one; predicted gain per iteration
 *     -(dT/dp) * step, capped by linear speed-up.
 * Every resize is weighed against its measured redistribution cost over the
 * remaining iterations (seed 003, 4.1.2): a growth happens only if the
 * predicted seconds saved over the horizon exceed the seconds spent
 * redistributing; a shrink back if the seconds lost by staying are at least
 * its cost, so a free shrink from a growth that brought nothing happens and
 * the processors go back.
 */

namespace malleo::policy {

namespace {

/* Most recent sample of each distinct size, newest first, at most three. */
struct RecentSizes {
	std::array<SizeSample, 3> sizes{};
	int count = 0;
};

RecentSizes recentSizes(std::span<const SizeSample> history)
{
	RecentSizes recent;
	for (auto it = history.rbegin(); it != history.rend() && recent.count < 3; ++it) {
		auto end = recent.sizes.begin() + recent.count;
		bool seen = std::any_of(recent.sizes.begin(), end, [&](const SizeSample &s) {
			return s.processors == it->processors;
		});
		if (!seen)
			recent.sizes[recent.count++] = *it;
	}
	return recent;
}

bool validHistory(std::span<const SizeSample> history)
{
	return !history.empty() &&
	       std::all_of(history.begin(), history.end(), [](const SizeSample &s) {
		       return s.processors >= 1 && std::isfinite(s.iterationTime) &&
			      s.iterationTime > 0.0;
	       });
}

/* Linear speed-up is the best growth can do before the sweet spot. */
double linearSpeedupGain(double time, std::int64_t from, std::int64_t to)
{
	return time * (1.0 - static_cast<double>(from) / static_cast<double>(to));
}

} // namespace

const char *sizeReasonName(SizeReason reason)
{
	switch (reason) {
	case SizeReason::FirstProbe:
		return "first-probe";
	case SizeReason::Improving:
		return "improving";
	case SizeReason::GrowthDidNotPay:
		return "growth-did-not-pay";
	case SizeReason::FlatSlope:
		return "flat-slope";
	case SizeReason::NoRoomToGrow:
		return "no-room-to-grow";
	case SizeReason::KnownWorse:
		return "known-worse";
	case SizeReason::CostExceedsGain:
		return "cost-exceeds-gain";
	case SizeReason::InvalidInput:
		return "invalid-input";
	}
	return "unknown";
}

/* Slope at the current size of the Lagrange interpolant through the last
 * two or three distinct sizes, in (ln p, ln T); see the comment at the top. */
SizeModel fitSlope(std::span<const SizeSample> history)
{
	SizeModel model;
	RecentSizes recent = recentSizes(history);
	if (recent.count < 2)
		return model;

	const auto x = [&](int k) {
		return std::log(static_cast<double>(recent.sizes[k].processors));
	};
	const auto y = [&](int k) { return std::log(recent.sizes[k].iterationTime); };
	double logSlope;
	if (recent.count == 2) {
		logSlope = (y(0) - y(1)) / (x(0) - x(1));
	} else {
		double x0 = x(0), x1 = x(1), x2 = x(2);
		logSlope = y(0) * (2 * x0 - x1 - x2) / ((x0 - x1) * (x0 - x2)) +
			   y(1) * (x0 - x2) / ((x1 - x0) * (x1 - x2)) +
			   y(2) * (x0 - x1) / ((x2 - x0) * (x2 - x1));
	}
	const SizeSample &now = recent.sizes[0];
	model.points = recent.count;
	model.normalizedSlope = -logSlope;
	/* dT/dp = (d ln T / d ln p) * T / p */
	model.slope = logSlope * now.iterationTime / static_cast<double>(now.processors);
	return model;
}

SizeDecision decideSize(const SweetSpotInput &input, const SweetSpotParams &params)
{
	SizeDecision d;
	if (!validHistory(input.history) || params.step < 1 || input.remainingIterations < 0 ||
	    !(input.growCost >= 0.0) || !(input.shrinkCost >= 0.0))
		return d;

	const SizeSample now = input.history.back();
	const RecentSizes recent = recentSizes(input.history);
	const double horizon = static_cast<double>(input.remainingIterations);
	d.current = now.processors;
	d.target = now.processors;
	d.model = fitSlope(input.history);

	if (recent.count >= 2 && recent.sizes[1].processors < now.processors &&
	    now.iterationTime >= recent.sizes[1].iterationTime * (1.0 - params.minImprovement)) {
		const SizeSample before = recent.sizes[1];
		d.cost = input.shrinkCost;
		d.gainPerIteration = now.iterationTime - before.iterationTime;
		d.horizonGain = d.gainPerIteration * horizon;
		if (d.horizonGain >= d.cost) {
			d.action = SizeAction::Shrink;
			d.reason = SizeReason::GrowthDidNotPay;
			d.target = before.processors;
		} else {
			d.reason = SizeReason::CostExceedsGain;
			d.declined = SizeAction::Shrink;
			d.declinedTarget = before.processors;
		}
		return d;
	}

	const std::int64_t next = now.processors + params.step;
	const double bound = linearSpeedupGain(now.iterationTime, now.processors, next);
	if (recent.count == 1) {
		d.reason = SizeReason::FirstProbe;
		d.gainPerIteration = bound;
	} else {
		if (!(d.model.normalizedSlope > params.slopeThreshold)) {
			d.reason = SizeReason::FlatSlope;
			return d;
		}
		d.reason = SizeReason::Improving;
		d.gainPerIteration =
		    std::min(-d.model.slope * static_cast<double>(params.step), bound);
	}
	d.horizonGain = d.gainPerIteration * horizon;
	d.cost = input.growCost;

	if (next > params.maxProcessors) {
		d.reason = SizeReason::NoRoomToGrow;
		return d;
	}
	bool knownWorse =
	    std::any_of(input.history.begin(), input.history.end(), [&](const SizeSample &s) {
		    return s.processors == next && s.iterationTime >= now.iterationTime;
	    });
	if (knownWorse) {
		d.reason = SizeReason::KnownWorse;
		return d;
	}
	if (!(d.horizonGain > d.cost)) {
		d.reason = SizeReason::CostExceedsGain;
		d.declined = SizeAction::Grow;
		d.declinedTarget = next;
		return d;
	}
	d.action = SizeAction::Grow;
	d.target = next;
	return d;
}

} // namespace malleo::policy
