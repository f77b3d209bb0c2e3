// SPDX-License-Identifier: Apache-2.0
// Properties over thousands of random layouts: 1..64 slots, random counts, blocks and grids, old and new ranks
// overlapping in part. Each schedule is applied to simulated buffers and must produce exactly the new layout.
#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include <doctest/doctest.h>

#include "simulated_ranks.h"

using namespace malleo::pcm;
using malleo::pcm::testing::Applied;

namespace {

constexpr int kLayouts = 3000;

class RandomLayouts
{
public:
	explicit RandomLayouts(std::uint64_t seed) : random_(seed) {}

	int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }

	// Old and new rank sets drawn from one pool a little larger than either, so they share some ranks (all of
	// them now and then, in the same order) and each has ranks of its own.
	std::pair<std::vector<int>, std::vector<int>> rankSets(int old_slots, int new_slots)
	{
		int pool = uniform(std::max(old_slots, new_slots), old_slots + new_slots);
		std::vector<int> all(static_cast<std::size_t>(pool));
		std::iota(all.begin(), all.end(), 0);
		std::shuffle(all.begin(), all.end(), random_);
		std::vector<int> old_ranks(all.begin(), all.begin() + old_slots);
		if (uniform(0, 9) == 0 && old_slots == new_slots)
			return {old_ranks, old_ranks};
		std::shuffle(all.begin(), all.end(), random_);
		return {old_ranks, std::vector<int>(all.begin(), all.begin() + new_slots)};
	}

	// `total` cut into `parts` counts, some of them zero.
	std::vector<std::int64_t> counts(std::int64_t total, int parts)
	{
		std::vector<std::int64_t> cuts{0, total};
		for (int k = 1; k < parts; ++k)
			cuts.push_back(std::uniform_int_distribution<std::int64_t>(0, total)(random_));
		std::sort(cuts.begin(), cuts.end());
		std::vector<std::int64_t> result;
		for (std::size_t k = 1; k < cuts.size(); ++k)
			result.push_back(cuts[k] - cuts[k - 1]);
		return result;
	}

	std::pair<Layout, Layout> counted(Distribution distribution)
	{
		int old_slots = uniform(1, 64), new_slots = uniform(1, 64);
		auto [old_ranks, new_ranks] = rankSets(old_slots, new_slots);
		std::int64_t total = uniform(0, 4) == 0 ? uniform(0, 10) : uniform(0, 3000);
		Layout from, to;
		from.distribution = to.distribution = distribution;
		from.globalCount = to.globalCount = total;
		from.ranks = old_ranks;
		to.ranks = new_ranks;
		from.counts = counts(total, old_slots);
		to.counts = counts(total, new_slots);
		return {from, to};
	}

	std::pair<Layout, Layout> cyclic1d()
	{
		int old_slots = uniform(1, 64), new_slots = uniform(1, 64);
		auto [old_ranks, new_ranks] = rankSets(old_slots, new_slots);
		Layout from, to;
		from.distribution = to.distribution = Distribution::BlockCyclic1d;
		from.globalCount = to.globalCount = uniform(0, 3000);
		from.ranks = old_ranks;
		to.ranks = new_ranks;
		from.block = uniform(0, 1) ? uniform(1, 8) : uniform(1, 200);
		to.block = uniform(0, 2) ? from.block : uniform(1, 64);
		return {from, to};
	}

	std::pair<Layout, Layout> cyclic2d()
	{
		Layout from, to;
		from.distribution = to.distribution = Distribution::BlockCyclic2d;
		from.rows = to.rows = uniform(0, 70);
		from.cols = to.cols = uniform(0, 70);
		for (Layout* layout : {&from, &to}) {
			layout->prow = uniform(1, 8);
			layout->pcol = uniform(1, 8);
			layout->blockRows = uniform(1, 12);
			layout->blockCols = uniform(1, 12);
		}
		if (uniform(0, 2) == 0) {
			to.blockRows = from.blockRows;
			to.blockCols = from.blockCols;
		}
		auto [old_ranks, new_ranks] = rankSets(from.prow * from.pcol, to.prow * to.pcol);
		from.ranks = old_ranks;
		to.ranks = new_ranks;
		return {from, to};
	}

private:
	std::mt19937_64 random_;
};

Applied run(const Schedule& schedule, const Layout& from, const Layout& to)
{
	Applied applied = testing::apply(schedule, from, to, testing::contents(from));
	if (!applied.problems.empty())
		FAIL_CHECK(applied.problems.front());
	return applied;
}

void checkLocalCounts(const Layout& layout)
{
	auto expected = testing::contents(layout);
	for (std::size_t slot = 0; slot < layout.ranks.size(); ++slot)
		REQUIRE(localCount(layout, static_cast<int>(slot)) == static_cast<std::int64_t>(expected[slot].size()));
}

// In no step does a rank send twice or receive twice, and no fewer steps would do.
void checkContentionFree(const Schedule& schedule)
{
	std::map<int, int> sends, receives;
	std::set<std::pair<int, int>> sending, receiving;
	for (const Transfer& t : schedule.transfers) {
		CHECK(sending.insert({t.step, t.from}).second);
		CHECK(receiving.insert({t.step, t.to}).second);
		++sends[t.from];
		++receives[t.to];
	}
	int degree = 1;
	for (auto [rank, n] : sends)
		degree = std::max(degree, n);
	for (auto [rank, n] : receives)
		degree = std::max(degree, n);
	CHECK(schedule.steps == degree);
}

}  // namespace

TEST_SUITE("redistribution properties")
{
	TEST_CASE("independent: right counts, every element once, at most n + m transfers, least data moved")
	{
		RandomLayouts random(5001);
		for (int k = 0; k < kLayouts; ++k) {
			auto [from, to] = random.counted(Distribution::Independent);
			Schedule s = schedule(from, to);
			Applied applied = run(s, from, to);
			REQUIRE(s.transfers.size() <= from.ranks.size() + to.ranks.size());
			std::vector<std::int64_t> all;
			for (const auto& slot : applied.contents)
				all.insert(all.end(), slot.begin(), slot.end());
			std::sort(all.begin(), all.end());
			std::vector<std::int64_t> expected(static_cast<std::size_t>(from.globalCount));
			std::iota(expected.begin(), expected.end(), 0);
			REQUIRE(all == expected);

			// A rank in both layouts keeps min(old, new) of its own elements; only the surplus moves.
			std::map<int, std::int64_t> new_count;
			for (std::size_t slot = 0; slot < to.ranks.size(); ++slot)
				new_count[to.ranks[slot]] = to.counts[slot];
			auto old_contents = testing::contents(from);
			std::int64_t surplus = 0;
			for (std::size_t slot = 0; slot < from.ranks.size(); ++slot) {
				auto stays = new_count.find(from.ranks[slot]);
				std::int64_t keep =
				    stays == new_count.end() ? 0 : std::min(from.counts[slot], stays->second);
				surplus += from.counts[slot] - keep;
			}
			REQUIRE(applied.moved == surplus);
		}
	}

	TEST_CASE("block1d: exact new contents, only overlapping ranges talk, at most n + m - 1 transfers")
	{
		RandomLayouts random(5002);
		for (int k = 0; k < kLayouts; ++k) {
			auto [from, to] = random.counted(Distribution::Block1d);
			Schedule s = schedule(from, to);
			Applied applied = run(s, from, to);
			REQUIRE(applied.contents == testing::contents(to));
			REQUIRE(s.transfers.size() + 1 <= from.ranks.size() + to.ranks.size());

			std::map<int, std::pair<std::int64_t, std::int64_t>> old_range, new_range;
			std::int64_t begin = 0;
			for (std::size_t slot = 0; slot < from.ranks.size(); begin += from.counts[slot++])
				old_range[from.ranks[slot]] = {begin, begin + from.counts[slot]};
			begin = 0;
			for (std::size_t slot = 0; slot < to.ranks.size(); begin += to.counts[slot++])
				new_range[to.ranks[slot]] = {begin, begin + to.counts[slot]};
			for (const Transfer& t : s.transfers) {
				auto [ob, oe] = old_range[t.from];
				auto [nb, ne] = new_range[t.to];
				REQUIRE(std::max(ob, nb) < std::min(oe, ne));
				REQUIRE(t.source.size() == 1);
			}
		}
	}

	TEST_CASE("block_cyclic1d: exact new contents, contention-free steps")
	{
		RandomLayouts random(5003);
		for (int k = 0; k < kLayouts; ++k) {
			auto [from, to] = random.cyclic1d();
			checkLocalCounts(from);
			checkLocalCounts(to);
			Schedule s = schedule(from, to);
			Applied applied = run(s, from, to);
			REQUIRE(applied.contents == testing::contents(to));
			checkContentionFree(s);
		}
	}

	TEST_CASE("block_cyclic2d: exact new contents, contention-free steps")
	{
		RandomLayouts random(5004);
		for (int k = 0; k < kLayouts; ++k) {
			auto [from, to] = random.cyclic2d();
			checkLocalCounts(from);
			checkLocalCounts(to);
			Schedule s = schedule(from, to);
			Applied applied = run(s, from, to);
			REQUIRE(applied.contents == testing::contents(to));
			checkContentionFree(s);
		}
	}

	TEST_CASE("same block size and identical ranks: block-cyclic moves nothing between ranks")
	{
		RandomLayouts random(5005);
		for (int k = 0; k < 200; ++k) {
			auto [from, to] = random.cyclic1d();
			to = from;
			Schedule s = schedule(from, to);
			for (const Transfer& t : s.transfers) {
				CHECK(t.from == t.to);
				CHECK(t.source.size() == 1);  // pieces merged back into one run
			}
		}
	}
}
