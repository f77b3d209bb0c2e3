// SPDX-License-Identifier: Apache-2.0
// Choices shared by the protocol modules. All randomness comes from the core's
// seeded generator, so a run is reproducible.
#pragma once

#include <algorithm>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <malleo/overlay_view.h>

namespace malleo::protocol {

inline bool contains(std::span<const std::string> ids, const std::string &id)
{
	return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Up to `n` elements of `from`, drawn without replacement.
inline std::vector<std::string> sample(std::vector<std::string> from, std::size_t n,
				       std::mt19937_64 &rng)
{
	std::shuffle(from.begin(), from.end(), rng);
	if (from.size() > n)
		from.resize(n);
	return from;
}

// The unvisited peer that looks most loaded (a WRM looks for work), ties broken
// at random; `allowed` filters the candidates.
template <typename Filter>
std::optional<std::string> mostLoadedUnvisited(const OverlayView &view,
					       std::span<const std::string> visited, Filter allowed)
{
	std::vector<const PeerEntry *> best;
	double bestUpw = -1.0;
	for (const PeerEntry &p : view.alive) {
		if (contains(visited, p.id) || !allowed(p))
			continue;
		if (p.profile.upw > bestUpw + 1e-9) {
			best.clear();
			bestUpw = p.profile.upw;
		}
		if (p.profile.upw >= bestUpw - 1e-9)
			best.push_back(&p);
	}
	if (best.empty())
		return std::nullopt;
	std::uniform_int_distribution<std::size_t> pick(0, best.size() - 1);
	return best[pick(*view.rng)]->id;
}

// A gossip sample: ids of alive peers and fresh candidates.
inline std::vector<std::string> gossipSample(const OverlayView &view, std::size_t n)
{
	std::vector<std::string> ids;
	for (const PeerEntry &p : view.alive)
		ids.push_back(p.id);
	for (const Candidate &c : view.candidates)
		ids.push_back(c.id);
	return sample(std::move(ids), n, *view.rng);
}

} // namespace malleo::protocol
