// SPDX-License-Identifier: Apache-2.0
// The synthetic star data: radial velocities drawn from a Student-t distribution (a halo population: a Gaussian
// core with heavy tails), each star a function of the seed and its global index only, so any process can make any
// star and a star is the same wherever it is made.
#pragma once

#include <cstdint>

namespace astro {

// A star as the session's `independent` buffer holds it: two doubles. The index travels with the star because an
// independent buffer keeps its elements but not their order across a reconfiguration; a double holds it exactly
// (below 2^53 stars).
struct Star {
	double index;
	double velocity;  // km/s
};
static_assert(sizeof(Star) == 2 * sizeof(double));

// The population the data are drawn from: what the fit should recover.
constexpr double kTrueMeanVelocity = -12.5;  // km/s
constexpr double kTrueScale = 35.0;          // km/s
constexpr double kDegreesOfFreedom = 4.0;    // the model's, fixed: only location and scale are fitted

Star makeStar(std::uint64_t seed, std::int64_t index);

} // namespace astro
