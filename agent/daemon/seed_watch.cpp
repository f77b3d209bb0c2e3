// SPDX-License-Identifier: Apache-2.0
#include "seed_watch.h"

#include <algorithm>

#include <fmt/format.h>

namespace malleo {

SeedWatch::SeedWatch(const std::vector<std::string> &seeds)
{
	for (const std::string &endpoint : seeds)
		seeds_.emplace(endpoint, Seed{});
}

std::string SeedWatch::helloSent(const std::string &endpoint, double now)
{
	auto it = seeds_.find(endpoint);
	if (it == seeds_.end())
		return {}; // a hello to a candidate the agent heard of, not to a seed
	Seed &seed = it->second;
	if (++seed.hellos == 1) {
		seed.first = now;
		return {};
	}
	if (seed.interval == 0.0) {
		// The first unanswered hello: the next warning after twice the wait it took.
		seed.interval = std::max(2 * (now - seed.first), 1e-3);
	} else if (now - seed.lastWarning >= seed.interval) {
		seed.interval = std::min(2 * seed.interval, kLongestInterval);
	} else {
		return {};
	}
	seed.lastWarning = now;
	const unsigned unanswered = seed.hellos - 1;
	return fmt::format(
	    "seed {} has not answered: {} hello{} unanswered in {:.1f} s; still asking", endpoint,
	    unanswered, unanswered == 1 ? "" : "s", now - seed.first);
}

void SeedWatch::peerUp()
{
	for (auto &[endpoint, seed] : seeds_)
		seed = Seed{};
}

} // namespace malleo
