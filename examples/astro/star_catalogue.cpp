// SPDX-License-Identifier: Apache-2.0
#include "star_catalogue.h"

#include <cmath>
#include <numbers>

namespace astro {

namespace {

// A counter-based generator (splitmix64's finalizer): the n-th draw of a star needs no state, so stars can be
// made in any order on any process.
std::uint64_t mix(std::uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

// A uniform in (0, 1): 53 random bits, never 0 (the logarithm below).
double uniform(std::uint64_t seed, std::int64_t index, int draw)
{
	const std::uint64_t bits = mix(mix(seed) ^ (static_cast<std::uint64_t>(index) * 8 + static_cast<std::uint64_t>(draw)));
	return (static_cast<double>(bits >> 11) + 0.5) * 0x1p-53;
}

// Two standard normals by Box-Muller from draws `first` and `first + 1`.
void normals(std::uint64_t seed, std::int64_t index, int first, double &a, double &b)
{
	const double radius = std::sqrt(-2.0 * std::log(uniform(seed, index, first)));
	const double angle = 2.0 * std::numbers::pi * uniform(seed, index, first + 1);
	a = radius * std::cos(angle);
	b = radius * std::sin(angle);
}

} // namespace

Star makeStar(std::uint64_t seed, std::int64_t index)
{
	// Student-t with 4 degrees of freedom: a normal over the root of a chi-square of 4 normals divided by 4.
	double z, n1, n2, n3, n4, unused;
	normals(seed, index, 0, z, unused);
	normals(seed, index, 2, n1, n2);
	normals(seed, index, 4, n3, n4);
	const double chi2 = n1 * n1 + n2 * n2 + n3 * n3 + n4 * n4;
	const double t = z / std::sqrt(chi2 / kDegreesOfFreedom);
	return {static_cast<double>(index), kTrueMeanVelocity + kTrueScale * t};
}

} // namespace astro
