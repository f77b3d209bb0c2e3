// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <span>

namespace malleo::policy {

// ReSHAPE's sweet-spot probing (seed 003, sections 3.1 and 4.1.1): grow an
// application while the iteration times say more processors still pay, and
// go back when the last growth did not.

/* One resize point: the size the application ran at and its iteration time. */
struct SizeSample {
	std::int64_t processors = 0;
	double iterationTime = 0.0; // seconds
};

struct SweetSpotParams {
	double slopeThreshold = 0.2; // on the normalized slope, see fitSlope()
	std::int64_t step = 1;	     // processors added per growth
	std::int64_t maxProcessors = 0;
	double minImprovement = 0.0; // a growth pays if T_new < T_old * (1 - this)
};

struct SweetSpotInput {
	std::span<const SizeSample> history; // chronological, last = current size
	std::int64_t remainingIterations = 0;
	double growCost = 0.0;	 // measured redistribution seconds for a growth
	double shrinkCost = 0.0; // and for a shrink
};

struct SizeModel {
	int points = 0;		      // 0: no model, 2: line, 3: quadratic
	double slope = 0.0;	      // dT/dp at the current size, seconds per processor
	double normalizedSlope = 0.0; // -(dT/dp) * p / T
};

enum class SizeAction { Stay, Grow, Shrink };

enum class SizeReason {
	FirstProbe,	 // grow: one size only, assume up to linear speed-up
	Improving,	 // grow: normalized slope above the threshold
	GrowthDidNotPay, // shrink back to the previous size
	FlatSlope,	 // stay: the model predicts too little benefit
	NoRoomToGrow,	 // stay: the next size exceeds maxProcessors
	KnownWorse,	 // stay: the next size was measured no faster than this one
	CostExceedsGain, // stay: redistribution costs more than the horizon gains
	InvalidInput,
};

struct SizeDecision {
	SizeAction action = SizeAction::Stay;
	SizeReason reason = SizeReason::InvalidInput;
	std::int64_t current = 0;
	std::int64_t target = 0;
	SizeModel model;
	double gainPerIteration = 0.0; // predicted seconds saved per iteration
	double horizonGain = 0.0;      // gainPerIteration * remainingIterations
	double cost = 0.0;	       // the redistribution cost it was weighed against
	// With CostExceedsGain: the resize the model wanted and its cost stopped (Grow or Shrink),
	// and its size.
	SizeAction declined = SizeAction::Stay;
	std::int64_t declinedTarget = 0;
};

const char *sizeReasonName(SizeReason reason);
SizeModel fitSlope(std::span<const SizeSample> history);
SizeDecision decideSize(const SweetSpotInput &input, const SweetSpotParams &params);

} // namespace malleo::policy
