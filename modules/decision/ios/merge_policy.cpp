// SPDX-License-Identifier: Apache-2.0
#include "merge_policy.h"

#include <algorithm>
#include <cmath>

namespace malleo::policy {

/* A window of 0 would make sigma_i undefined and one above the capacity
 * cannot be held; both are clamped rather than rejected because the window
 * comes from a config the module has already validated. */
StabilityWindow::StabilityWindow(std::size_t window)
    : window_(std::clamp<std::size_t>(window, 1, kCapacity))
{
}

void StabilityWindow::push(double apw)
{
	samples_[next_] = apw;
	next_ = (next_ + 1) % window_;
	count_ = std::min(count_ + 1, window_);
}

void StabilityWindow::clear()
{
	next_ = 0;
	count_ = 0;
}

/* Eq. 13. Order does not matter for the mean or the deviation, so the ring
 * is read as stored. */
double StabilityWindow::mean() const
{
	if (count_ == 0)
		return 0.0;
	double sum = 0.0;
	for (std::size_t k = 0; k < count_; ++k)
		sum += samples_[k];
	return sum / static_cast<double>(count_);
}

/* Eq. 14: the population deviation (1/k), as the paper writes it. */
double StabilityWindow::stddev() const
{
	return populationStddev(std::span<const double>(samples_.data(), count_));
}

/* Eq. 15-16. No peers means no evidence of instability around us: 0. */
double populationStddev(std::span<const double> values)
{
	if (values.empty())
		return 0.0;
	double sum = 0.0;
	for (double v : values)
		sum += v;
	double avg = sum / static_cast<double>(values.size());
	double squares = 0.0;
	for (double v : values)
		squares += (v - avg) * (v - avg);
	return std::sqrt(squares / static_cast<double>(values.size()));
}

const char *mergeBlockName(MergeBlock block)
{
	switch (block) {
	case MergeBlockNone:
		return "none";
	case MergeBlockTooFewSamples:
		return "too-few-samples";
	case MergeBlockLocalUnstable:
		return "local-unstable";
	case MergeBlockNeighbourhoodUnstable:
		return "neighbourhood-unstable";
	case MergeBlockNotOversubscribed:
		return "not-oversubscribed";
	case MergeBlockFewContextSwitches:
		return "few-context-switches";
	case MergeBlockHoldDown:
		return "hold-down";
	}
	return "unknown";
}

/*
 * Merge when sigma_i < epsilon1, sigma < epsilon2, more processes than cores,
 * a context-switch rate above the threshold, and no split within the
 * hold-down time. The hold-down is what keeps a node from merging the
 * processes a WRM made it split a moment ago (seed 001's thrashing). A
 * sigma_i from a window that is not yet full says little, so it blocks too.
 * Comparisons are strict as in the paper: a value equal to its bound blocks,
 * except the hold-down, which has elapsed once now - lastSplit == holdDown.
 * A NaN input fails its comparison and therefore blocks.
 */
MergeVerdict decideMerge(const StabilityWindow &local, const MergeInput &input,
			 const MergeParams &params)
{
	MergeVerdict verdict;
	verdict.samples = local.size();
	verdict.sigmaLocal = local.stddev();
	verdict.sigmaPeers = populationStddev(input.peerSigmas);
	verdict.processes = input.processes;
	verdict.cores = input.cores;
	verdict.contextSwitchRate = input.contextSwitchRate;
	if (input.lastSplitTime)
		verdict.sinceLastSplit = input.now - *input.lastSplitTime;

	auto block = [&verdict](bool blocked, MergeBlock why) {
		if (!blocked)
			return;
		if (verdict.blocked == 0)
			verdict.reason = why;
		verdict.blocked |= why;
	};
	block(!local.full(), MergeBlockTooFewSamples);
	block(!(verdict.sigmaLocal < params.epsilon1), MergeBlockLocalUnstable);
	block(!(verdict.sigmaPeers < params.epsilon2), MergeBlockNeighbourhoodUnstable);
	block(!(input.processes > input.cores), MergeBlockNotOversubscribed);
	block(!(input.contextSwitchRate > params.contextSwitchThreshold),
	      MergeBlockFewContextSwitches);
	block(verdict.sinceLastSplit && !(*verdict.sinceLastSplit >= params.holdDown),
	      MergeBlockHoldDown);

	verdict.merge = verdict.blocked == 0;
	return verdict;
}

} // namespace malleo::policy
