// SPDX-License-Identifier: Apache-2.0
// The maximum-likelihood fit of a Student-t velocity distribution's location and scale by damped Fisher scoring,
// split as a farmer/worker computation: workers sum per-star terms at trial parameters, the farmer accepts or
// rejects the trial and picks the next one.
#pragma once

#include <cstdint>

#include "exact_sum.h"
#include "star_catalogue.h"

namespace astro {

// The farmer's state. Every process keeps a copy (the session replicates it), because the farmer is whoever is
// rank 0, and a migration may replace rank 0 by another process.
struct FitState {
	double mean = 0.0;              // accepted location, km/s
	double log_scale = 0.0;         // accepted log of the scale
	double log_likelihood = 0.0;    // at the accepted parameters; valid once accepted > 0
	double step_mean = 0.0;         // the Fisher-scoring step from the accepted parameters
	double step_log_scale = 0.0;
	double damping = 1.0;           // the fraction of that step being tried
	double trial_mean = 0.0;        // the parameters the workers evaluate next
	double trial_log_scale = 0.0;
	std::int64_t accepted = 0;
	std::int64_t rejected = 0;
};

// What the workers return: sums over their stars at the trial parameters, exact so the farmer sees the same totals
// whatever the partition.
struct Partial {
	ExactSum log_density;   // sum of -(nu + 1) / 2 * log1p(z^2 / nu), z = (v - mean) / scale
	ExactSum score_mean;    // sum of (nu + 1) z / (nu + z^2)
	ExactSum score_scale;   // sum of (nu + 1) z^2 / (nu + z^2)
};

// The fit starts far from the answer, at rest with unit scale, so the iterations have work to do.
FitState initialFit();

void evaluate(const Star *stars, std::int64_t count, const FitState &fit, Partial &partial);

// The farmer's step; `partial` holds the totals over all `stars`.
void advance(FitState &fit, const Partial &partial, std::int64_t stars);

} // namespace astro
