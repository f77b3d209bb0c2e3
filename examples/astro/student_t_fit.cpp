// SPDX-License-Identifier: Apache-2.0
#include "student_t_fit.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace astro {

namespace {

constexpr double nu = kDegreesOfFreedom;
// A scale may change by at most e^3 per step: far from the answer the scoring step overshoots.
constexpr double kLargestLogScaleStep = 3.0;

} // namespace

FitState initialFit()
{
	return FitState{};
}

void evaluate(const Star *stars, std::int64_t count, const FitState &fit, Partial &partial)
{
	const double inverse_scale = std::exp(-fit.trial_log_scale);
	for (std::int64_t i = 0; i < count; ++i) {
		const double z = (stars[i].velocity - fit.trial_mean) * inverse_scale;
		const double z2 = z * z;
		partial.log_density.add(-0.5 * (nu + 1.0) * std::log1p(z2 / nu));
		partial.score_mean.add((nu + 1.0) * z / (nu + z2));
		partial.score_scale.add((nu + 1.0) * z2 / (nu + z2));
	}
}

void advance(FitState &fit, const Partial &partial, std::int64_t stars)
{
	const double n = static_cast<double>(stars);
	const double normalization = std::lgamma((nu + 1.0) / 2.0) - std::lgamma(nu / 2.0) -
				     0.5 * std::log(nu * std::numbers::pi);
	const double log_likelihood = n * (normalization - fit.trial_log_scale) + partial.log_density.value();
	const bool better = std::isfinite(log_likelihood) && partial.score_mean.finite() &&
			    partial.score_scale.finite() &&
			    (fit.accepted == 0 || log_likelihood >= fit.log_likelihood);
	if (better) {
		fit.mean = fit.trial_mean;
		fit.log_scale = fit.trial_log_scale;
		fit.log_likelihood = log_likelihood;
		// Fisher scoring: the score over the expected information, per star (nu + 1) / (nu + 3) / scale^2 for
		// the location and 2 nu / (nu + 3) for the log of the scale.
		fit.step_mean = partial.score_mean.value() * std::exp(fit.log_scale) * (nu + 3.0) / ((nu + 1.0) * n);
		fit.step_log_scale = std::clamp((partial.score_scale.value() - n) * (nu + 3.0) / (2.0 * nu * n),
						-kLargestLogScaleStep, kLargestLogScaleStep);
		fit.damping = 1.0;
		++fit.accepted;
	} else {
		fit.damping *= 0.5;
		++fit.rejected;
	}
	fit.trial_mean = fit.mean + fit.damping * fit.step_mean;
	fit.trial_log_scale = fit.log_scale + fit.damping * fit.step_log_scale;
}

} // namespace astro
