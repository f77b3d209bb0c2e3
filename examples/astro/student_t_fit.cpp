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

struct Trial {
	double mean;
	double log_scale;
};

// Model k: the step damped k more times than the fit's trial (model 0 is the trial itself, bit for bit).
Trial trialModel(const FitState &fit, std::size_t k)
{
	if (k == 0)
		return {fit.trial_mean, fit.trial_log_scale};
	const double damping = std::ldexp(fit.damping, -static_cast<int>(k));
	return {fit.mean + damping * fit.step_mean, fit.log_scale + damping * fit.step_log_scale};
}

} // namespace

FitState initialFit()
{
	return FitState{};
}

void evaluate(const Star *stars, std::int64_t count, const FitState &fit, std::vector<Partial> &partials)
{
	for (std::size_t k = 0; k < partials.size(); ++k) {
		const Trial trial = trialModel(fit, k);
		const double inverse_scale = std::exp(-trial.log_scale);
		Partial &partial = partials[k];
		for (std::int64_t i = 0; i < count; ++i) {
			const double z = (stars[i].velocity - trial.mean) * inverse_scale;
			const double z2 = z * z;
			partial.log_density.add(-0.5 * (nu + 1.0) * std::log1p(z2 / nu));
			partial.score_mean.add((nu + 1.0) * z / (nu + z2));
			partial.score_scale.add((nu + 1.0) * z2 / (nu + z2));
		}
	}
}

void advance(FitState &fit, const std::vector<Partial> &partials, std::int64_t stars)
{
	const double n = static_cast<double>(stars);
	const double normalization = std::lgamma((nu + 1.0) / 2.0) - std::lgamma(nu / 2.0) -
				     0.5 * std::log(nu * std::numbers::pi);
	bool better = false;
	for (std::size_t k = 0; k < partials.size() && !better; ++k) {
		const Trial trial = trialModel(fit, k);
		const Partial &partial = partials[k];
		const double log_likelihood = n * (normalization - trial.log_scale) + partial.log_density.value();
		better = std::isfinite(log_likelihood) && partial.score_mean.finite() && partial.score_scale.finite() &&
			 (fit.accepted == 0 || log_likelihood >= fit.log_likelihood);
		if (!better) {
			++fit.rejected;
			continue;
		}
		fit.mean = trial.mean;
		fit.log_scale = trial.log_scale;
		fit.log_likelihood = log_likelihood;
		// Fisher scoring: the score over the expected information, per star (nu + 1) / (nu + 3) / scale^2 for
		// the location and 2 nu / (nu + 3) for the log of the scale.
		fit.step_mean = partial.score_mean.value() * std::exp(fit.log_scale) * (nu + 3.0) / ((nu + 1.0) * n);
		fit.step_log_scale = std::clamp((partial.score_scale.value() - n) * (nu + 3.0) / (2.0 * nu * n),
						-kLargestLogScaleStep, kLargestLogScaleStep);
		fit.damping = 1.0;
		++fit.accepted;
	}
	if (!better)
		fit.damping = std::ldexp(fit.damping, -static_cast<int>(partials.size()));
	fit.trial_mean = fit.mean + fit.damping * fit.step_mean;
	fit.trial_log_scale = fit.log_scale + fit.damping * fit.step_log_scale;
}

} // namespace astro
