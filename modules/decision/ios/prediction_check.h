// SPDX-License-Identifier: Apache-2.0
// Whether the splits' predicted gains come true. Each split this node decides is checked against the application's
// iteration time measured at its new size (ApplicationInfo::sizes, which the agent hosting rank 0 keeps), and the
// trust the module puts in its split predictions moves halfway toward the share of the gain that came true: a split
// that gained nothing halves the next predictions, so a rule that keeps missing stops splitting on small gains.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <malleo/decision_module.h>

namespace malleo::ios {

class PredictionCheck
{
public:
	// Trust never falls below this: a damped rule still acts on a large enough predicted gain.
	static constexpr double kFloor = 0.2;

	// A split of `app` from `before` to `after` processes, predicted to cut its iteration time by `gain`, decided at
	// `now`; kept only where the application's iteration time at `before` is known (its root agent).
	void predicted(const ApplicationInfo &app, int64_t after, double gain, double now);
	// Compares what the view's applications measured with their pending predictions, `settle` seconds after the
	// split's result; a prediction with no result within `expiry` seconds is forgotten.
	void observe(const DecisionView &view, double settle, double expiry);
	double trust() const { return trust_; }

private:
	struct Pending {
		int64_t before;
		int64_t after;
		double secondsBefore;
		double gain;
		double at;
	};
	std::map<std::string, Pending> pending_;
	double trust_ = 1.0;
};

} // namespace malleo::ios
