// SPDX-License-Identifier: Apache-2.0
// Draws from a 64-bit Mersenne Twister with arithmetic of our own, so that a
// seed gives the same run with any standard library.
#pragma once

#include <cstdint>
#include <random>

namespace malleo::sim {

// Uniform in [0, 1).
inline double uniform01(std::mt19937_64 &rng)
{
	return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Uniform in [0, n).
inline uint64_t uniformBelow(std::mt19937_64 &rng, uint64_t n)
{
	return n ? static_cast<uint64_t>(uniform01(rng) * static_cast<double>(n)) % n : 0;
}

// A seed for a component, mixed from the run's seed (splitmix64), so that
// adding a node does not shift every other node's draws.
inline uint64_t deriveSeed(uint64_t seed, uint64_t component)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull * (component + 1);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

} // namespace malleo::sim
