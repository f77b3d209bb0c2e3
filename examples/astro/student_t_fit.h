// SPDX-License-Identifier: Apache-2.0
// The maximum-likelihood fit of a Student-t velocity distribution's location and scale by damped Fisher scoring,
// split as a farmer/worker computation: workers sum per-star terms at trial parameters, the farmer accepts or
// rejects the trial and picks the next one.
//
// Each iteration tests `models` trial models (seed 000, 4.1: "each iteration involves testing multiple models to
// determine which model parameters to change"): the scoring step damped by 1, 1/2, ... 1/2^(models-1) of the
// current damping, a backtracking line search done at once. The farmer takes the first that does not lower the
// likelihood; with one model this is the plain damped scoring. More models is more computation per star for the
// same data, which is what sets the paper's low communication to computation ratio.
#pragma once

#include <cstdint>
#include <vector>

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

// Sums the terms of `stars` at each of the fit's trial models, one Partial per model (partials.size() models).
void evaluate(const Star *stars, std::int64_t count, const FitState &fit, std::vector<Partial> &partials);

// The farmer's step; `partials` hold the totals over all `stars`, one per model.
void advance(FitState &fit, const std::vector<Partial> &partials, std::int64_t stars);

} // namespace astro
