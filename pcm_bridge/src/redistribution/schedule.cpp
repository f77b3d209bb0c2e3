// SPDX-License-Identifier: Apache-2.0
// Layout checks, local sizes and the dispatch to the schedule of each distribution.
#include "redistribution/schedule.h"

#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>

#include "redistribution/distribution_schedules.h"

namespace malleo::pcm {

namespace {

const char* distributionName(Distribution distribution)
{
	switch (distribution) {
	case Distribution::Independent:
		return "independent";
	case Distribution::Block1d:
		return "block1d";
	case Distribution::BlockCyclic1d:
		return "block_cyclic1d";
	case Distribution::BlockCyclic2d:
		return "block_cyclic2d";
	}
	return "unknown";
}

std::string validateCounts(const Layout& layout)
{
	if (layout.counts.size() != layout.ranks.size())
		return "counts has " + std::to_string(layout.counts.size()) + " entries for " +
		       std::to_string(layout.ranks.size()) + " ranks";
	std::int64_t sum = 0;
	for (std::size_t slot = 0; slot < layout.counts.size(); ++slot) {
		std::int64_t count = layout.counts[slot];
		if (count < 0)
			return "counts[" + std::to_string(slot) + "] is negative (" + std::to_string(count) + ")";
		if (count > std::numeric_limits<std::int64_t>::max() - sum)
			return "counts overflow a 64-bit total";
		sum += count;
	}
	if (sum != layout.globalCount)
		return "counts sum to " + std::to_string(sum) + ", not global_count " +
		       std::to_string(layout.globalCount);
	return {};
}

std::string validateBlockCyclic2d(const Layout& layout)
{
	if (layout.rows < 0 || layout.cols < 0)
		return "rows and cols must not be negative";
	if (layout.blockRows < 1 || layout.blockCols < 1)
		return "block_rows and block_cols must be at least 1";
	if (layout.prow < 1 || layout.pcol < 1)
		return "prow and pcol must be at least 1";
	if (static_cast<std::int64_t>(layout.prow) * layout.pcol != static_cast<std::int64_t>(layout.ranks.size()))
		return "a " + std::to_string(layout.prow) + " x " + std::to_string(layout.pcol) + " grid needs " +
		       std::to_string(static_cast<std::int64_t>(layout.prow) * layout.pcol) + " ranks, not " +
		       std::to_string(layout.ranks.size());
	if (layout.cols > 0 && layout.rows > std::numeric_limits<std::int64_t>::max() / layout.cols)
		return "rows x cols overflows a 64-bit count";
	if (layout.globalCount != 0 && layout.globalCount != layout.rows * layout.cols)
		return "global_count " + std::to_string(layout.globalCount) + " is neither 0 nor rows x cols (" +
		       std::to_string(layout.rows * layout.cols) + ")";
	return {};
}

std::string validateKind(const Layout& layout)
{
	switch (layout.distribution) {
	case Distribution::Independent:
	case Distribution::Block1d:
		return validateCounts(layout);
	case Distribution::BlockCyclic1d:
		if (layout.globalCount < 0)
			return "global_count is negative";
		if (layout.block < 1)
			return "block must be at least 1";
		return {};
	case Distribution::BlockCyclic2d:
		return validateBlockCyclic2d(layout);
	}
	return "unknown distribution kind";
}

std::int64_t globalSize(const Layout& layout)
{
	if (layout.distribution == Distribution::BlockCyclic2d)
		return layout.rows * layout.cols;
	return layout.globalCount;
}

}  // namespace

std::string validate(const Layout& layout)
{
	if (layout.ranks.empty())
		return std::string(distributionName(layout.distribution)) + " layout: no ranks";
	if (layout.ranks.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
		return std::string(distributionName(layout.distribution)) + " layout: too many ranks";
	std::set<int> seen;
	for (int rank : layout.ranks) {
		if (rank < 0)
			return std::string(distributionName(layout.distribution)) + " layout: negative rank " +
			       std::to_string(rank);
		if (!seen.insert(rank).second)
			return std::string(distributionName(layout.distribution)) + " layout: rank " +
			       std::to_string(rank) + " holds two slots";
	}
	std::string problem = validateKind(layout);
	if (!problem.empty())
		return std::string(distributionName(layout.distribution)) + " layout: " + problem;
	return {};
}

std::int64_t localCount(const Layout& layout, int slot)
{
	if (slot < 0 || static_cast<std::size_t>(slot) >= layout.ranks.size())
		throw std::out_of_range("localCount: slot " + std::to_string(slot) + " outside a layout of " +
					std::to_string(layout.ranks.size()) + " slots");
	switch (layout.distribution) {
	case Distribution::Independent:
	case Distribution::Block1d:
		return layout.counts.at(static_cast<std::size_t>(slot));
	case Distribution::BlockCyclic1d:
		return detail::blockCyclicExtent(layout.globalCount, layout.block,
						 static_cast<int>(layout.ranks.size()), slot);
	case Distribution::BlockCyclic2d:
		return detail::blockCyclicExtent(layout.rows, layout.blockRows, layout.prow, slot / layout.pcol) *
		       detail::blockCyclicExtent(layout.cols, layout.blockCols, layout.pcol, slot % layout.pcol);
	}
	return 0;
}

Schedule schedule(const Layout& from, const Layout& to)
{
	if (std::string problem = validate(from); !problem.empty())
		throw std::invalid_argument("old " + problem);
	if (std::string problem = validate(to); !problem.empty())
		throw std::invalid_argument("new " + problem);
	if (from.distribution != to.distribution)
		throw std::invalid_argument(std::string("old layout is ") + distributionName(from.distribution) +
					    ", new is " + distributionName(to.distribution) +
					    ": the kind cannot change");
	if (from.distribution == Distribution::BlockCyclic2d && (from.rows != to.rows || from.cols != to.cols))
		throw std::invalid_argument("old matrix is " + std::to_string(from.rows) + " x " +
					    std::to_string(from.cols) + ", new is " + std::to_string(to.rows) + " x " +
					    std::to_string(to.cols));
	if (globalSize(from) != globalSize(to))
		throw std::invalid_argument("old layout holds " + std::to_string(globalSize(from)) +
					    " elements, new holds " + std::to_string(globalSize(to)));
	switch (from.distribution) {
	case Distribution::Independent:
		return detail::independentSchedule(from, to);
	case Distribution::Block1d:
		return detail::block1dSchedule(from, to);
	case Distribution::BlockCyclic1d:
		return detail::blockCyclic1dSchedule(from, to);
	case Distribution::BlockCyclic2d:
		return detail::blockCyclic2dSchedule(from, to);
	}
	throw std::invalid_argument("unknown distribution kind");
}

bool keepsInPlace(const Schedule& schedule, int rank, std::int64_t held)
{
	bool kept = true;
	for (const Transfer& transfer : schedule.transfers)
		if (transfer.to == rank)
			forEachChunk(transfer, [&](std::int64_t source, std::int64_t destination, std::int64_t) {
				kept = kept && (transfer.from == rank ? source == destination : destination >= held);
			});
	return kept;
}

std::int64_t elementCount(const std::vector<Segment>& segments)
{
	std::int64_t total = 0;
	for (const Segment& segment : segments)
		total += segment.count;
	return total;
}

std::vector<Segment> slice(const std::vector<Segment>& segments, std::int64_t skip, std::int64_t count)
{
	std::vector<Segment> result;
	for (const Segment& segment : segments) {
		if (count <= 0)
			break;
		if (skip >= segment.count) {
			skip -= segment.count;
			continue;
		}
		const std::int64_t take = std::min(segment.count - skip, count);
		result.push_back({segment.offset + skip, take});
		skip = 0;
		count -= take;
	}
	return result;
}

}  // namespace malleo::pcm
