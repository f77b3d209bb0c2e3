// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace malleo::policy {

// Merge policy of seed 001, eq. 13-16: merge co-located processes only when
// this node and its surroundings have been stable for a while.

/* The last k APW samples of a node, oldest overwritten first. */
class StabilityWindow
{
public:
	static constexpr std::size_t kCapacity = 64;

	explicit StabilityWindow(std::size_t window = 10);

	void push(double apw);
	void clear();

	std::size_t window() const { return window_; }
	std::size_t size() const { return count_; }
	bool full() const { return count_ == window_; }

	double mean() const;
	double stddev() const;

private:
	std::array<double, kCapacity> samples_{};
	std::size_t window_;
	std::size_t next_ = 0;
	std::size_t count_ = 0;
};

double populationStddev(std::span<const double> values);

struct MergeParams {
	double epsilon1 = 0.05;			// sigma_i must be below this
	double epsilon2 = 0.05;			// sigma of the peers' sigma_j must be below this
	double contextSwitchThreshold = 5000.0; // per second; the rate must be above it
	double holdDown = 60.0;			// seconds after a split with no merge
};

struct MergeInput {
	std::span<const double> peerSigmas; // sigma_j as the peers reported them
	std::int64_t processes = 0;	    // on this node, all applications
	std::int64_t cores = 1;
	double contextSwitchRate = 0.0; // per second, from /proc/stat
	double now = 0.0;		// seconds, any fixed origin
	std::optional<double> lastSplitTime;
};

/* Conditions that can block a merge, as bits so a verdict lists them all. */
enum MergeBlock : std::uint32_t {
	MergeBlockNone = 0,
	MergeBlockTooFewSamples = 1u << 0,
	MergeBlockLocalUnstable = 1u << 1,
	MergeBlockNeighbourhoodUnstable = 1u << 2,
	MergeBlockNotOversubscribed = 1u << 3,
	MergeBlockFewContextSwitches = 1u << 4,
	MergeBlockHoldDown = 1u << 5,
};

struct MergeVerdict {
	bool merge = false;
	MergeBlock reason = MergeBlockNone; // the first blocking condition in the order above
	std::uint32_t blocked = 0;	    // every blocking condition
	std::size_t samples = 0;
	double sigmaLocal = 0.0;
	double sigmaPeers = 0.0;
	std::int64_t processes = 0;
	std::int64_t cores = 0;
	double contextSwitchRate = 0.0;
	std::optional<double> sinceLastSplit;
};

const char *mergeBlockName(MergeBlock block);
MergeVerdict decideMerge(const StabilityWindow &local, const MergeInput &input,
			 const MergeParams &params);

} // namespace malleo::policy
