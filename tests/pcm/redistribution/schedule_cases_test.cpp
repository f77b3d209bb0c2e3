// SPDX-License-Identifier: Apache-2.0
// Worked cases: small layouts whose schedules are written out by hand, and the checks of bad layouts.
#include <stdexcept>

#include <doctest/doctest.h>

#include "simulated_ranks.h"

using namespace malleo::pcm;

namespace {

Layout counted(Distribution distribution, std::vector<int> ranks, std::vector<std::int64_t> counts)
{
	Layout layout;
	layout.distribution = distribution;
	layout.ranks = std::move(ranks);
	for (auto count : counts)
		layout.globalCount += count;
	layout.counts = std::move(counts);
	return layout;
}

// A transfer as "from>to:src_offset+count,...>dst_offset+count,..." so a whole schedule compares in one CHECK.
std::string describe(const Schedule& schedule)
{
	std::string text;
	for (const Transfer& transfer : schedule.transfers) {
		text += std::to_string(transfer.from) + ">" + std::to_string(transfer.to) + "@" +
			std::to_string(transfer.step) + ":";
		for (const Segment& s : transfer.source)
			text += std::to_string(s.offset) + "+" + std::to_string(s.count) + ",";
		text += ">";
		for (const Segment& s : transfer.destination)
			text += std::to_string(s.offset) + "+" + std::to_string(s.count) + ",";
		text += " ";
	}
	return text;
}

}  // namespace

TEST_SUITE("redistribution cases")
{
	TEST_CASE("independent split 2 -> 4: each stays with half, the new ranks get the other halves")
	{
		Layout from = counted(Distribution::Independent, {0, 1}, {10, 10});
		Layout to = counted(Distribution::Independent, {0, 1, 2, 3}, {5, 5, 5, 5});
		Schedule s = schedule(from, to);
		CHECK(describe(s) == "0>0@0:0+5,>0+5, 1>1@0:0+5,>0+5, 0>2@0:5+5,>0+5, 1>3@0:5+5,>0+5, ");
		CHECK(s.steps == 1);
	}

	TEST_CASE("kept in place: the first rank of a block1d split, no rank of a merge that receives")
	{
		// 2 -> 4 over ranks 0..3: rank 0 keeps the start of its block, rank 1 gets rank 0's second half.
		const Schedule split = schedule(counted(Distribution::Block1d, {0, 1}, {6, 6}),
						counted(Distribution::Block1d, {0, 1, 2, 3}, {3, 3, 3, 3}));
		CHECK(keepsInPlace(split, 0));
		CHECK_FALSE(keepsInPlace(split, 1));
		CHECK_FALSE(keepsInPlace(split, 2));
		// 2 -> 3: rank 1 keeps some of its elements, but at another offset.
		const Schedule uneven = schedule(counted(Distribution::Block1d, {0, 1}, {6, 6}),
						 counted(Distribution::Block1d, {0, 1, 2}, {4, 4, 4}));
		CHECK(keepsInPlace(uneven, 0));
		CHECK_FALSE(keepsInPlace(uneven, 1));
		// 4 -> 2: rank 0 keeps its block where it is but receives more after it.
		const Schedule merge = schedule(counted(Distribution::Block1d, {0, 1, 2, 3}, {3, 3, 3, 3}),
						counted(Distribution::Block1d, {0, 1}, {6, 6}));
		CHECK_FALSE(keepsInPlace(merge, 0));
		CHECK(keepsInPlace(merge, 3));  // receives nothing: trivially in place
		// ... which it may, into room past the 3 elements it holds; not when it is told it holds more.
		CHECK(keepsInPlace(merge, 0, 3));
		CHECK_FALSE(keepsInPlace(merge, 0, 4));
		// Rank 1 gets its new block from ranks 2 and 3, none of it at its own offsets: room does not help.
		CHECK_FALSE(keepsInPlace(merge, 1, 3));
		// Rank 0 of the 2 -> 3 split above holds 6 and keeps 4: nothing comes from others, whatever it holds.
		CHECK(keepsInPlace(uneven, 0, 6));
		// A rank that keeps all it has: a migration's staying processes.
		const Schedule same = schedule(counted(Distribution::Block1d, {0, 1}, {6, 6}),
					       counted(Distribution::Block1d, {0, 2}, {6, 6}));
		CHECK(keepsInPlace(same, 0));
		CHECK_FALSE(keepsInPlace(same, 2));
	}

	TEST_CASE("independent merge 3 -> 1 onto a rank that held nothing before")
	{
		Layout from = counted(Distribution::Independent, {2, 0, 1}, {3, 4, 5});
		Layout to = counted(Distribution::Independent, {4}, {12});
		CHECK(describe(schedule(from, to)) == "2>4@0:0+3,>0+3, 0>4@0:0+4,>3+4, 1>4@0:0+5,>7+5, ");
	}

	TEST_CASE("independent: uneven counts walk surplus into deficit (Fig. 3)")
	{
		Layout from = counted(Distribution::Independent, {0, 1, 2}, {9, 1, 2});
		Layout to = counted(Distribution::Independent, {0, 1, 2}, {4, 4, 4});
		CHECK(describe(schedule(from, to)) ==
		      "0>0@0:0+4,>0+4, 1>1@0:0+1,>0+1, 2>2@0:0+2,>0+2, 0>1@0:4+3,>1+3, 0>2@0:7+2,>2+2, ");
	}

	TEST_CASE("block1d split 2 -> 3 moves only between overlapping neighbours")
	{
		Layout from = counted(Distribution::Block1d, {0, 1}, {6, 6});
		Layout to = counted(Distribution::Block1d, {0, 1, 2}, {4, 4, 4});
		CHECK(describe(schedule(from, to)) ==
		      "0>0@0:0+4,>0+4, 0>1@0:4+2,>0+2, 1>1@0:0+2,>2+2, 1>2@0:2+4,>0+4, ");
	}

	TEST_CASE("block1d merge 4 -> 2 over empty slots")
	{
		Layout from = counted(Distribution::Block1d, {0, 1, 2, 3}, {3, 0, 3, 2});
		Layout to = counted(Distribution::Block1d, {0, 2}, {4, 4});
		CHECK(describe(schedule(from, to)) ==
		      "0>0@0:0+3,>0+3, 2>0@0:0+1,>3+1, 2>2@0:1+2,>0+2, 3>2@0:0+2,>2+2, ");
	}

	TEST_CASE("block1d with identical layouts is one local copy per rank")
	{
		Layout from = counted(Distribution::Block1d, {3, 1}, {5, 7});
		CHECK(describe(schedule(from, from)) == "3>3@0:0+5,>0+5, 1>1@0:0+7,>0+7, ");
	}

	TEST_CASE("block_cyclic1d 2 -> 4 with blocks of 2: two contention-free steps")
	{
		Layout from;
		from.distribution = Distribution::BlockCyclic1d;
		from.ranks = {0, 1};
		from.globalCount = 8;
		from.block = 2;
		Layout to = from;
		to.ranks = {0, 1, 2, 3};
		Schedule s = schedule(from, to);
		CHECK(s.steps == 2);
		REQUIRE(s.transfers.size() == 4);
		// Rank 0 holds elements 0,1,4,5 and rank 1 holds 2,3,6,7; afterwards rank k holds 2k, 2k+1.
		for (const Transfer& t : s.transfers) {
			CHECK(t.source.size() == 1);
			CHECK(t.source[0].count == 2);
			CHECK(t.source[0].offset == (t.to >= 2 ? 2 : 0));
			CHECK(t.from == t.to % 2);
		}
		CHECK(s.transfers[0].step == 0);
		CHECK(s.transfers[1].step == 0);
		CHECK(s.transfers[2].step == 1);
		CHECK(s.transfers[3].step == 1);
	}

	TEST_CASE("block_cyclic1d local counts with a short last block")
	{
		Layout layout;
		layout.distribution = Distribution::BlockCyclic1d;
		layout.ranks = {0, 1, 2};
		layout.globalCount = 7;
		layout.block = 2;
		CHECK(localCount(layout, 0) == 3);
		CHECK(localCount(layout, 1) == 2);
		CHECK(localCount(layout, 2) == 2);
		CHECK_THROWS_AS(localCount(layout, 3), std::out_of_range);
	}

	TEST_CASE("block_cyclic2d 1x1 -> 2x2: a quadrant is two row pieces in, one contiguous run out")
	{
		Layout from;
		from.distribution = Distribution::BlockCyclic2d;
		from.ranks = {0};
		from.rows = from.cols = 4;
		from.blockRows = from.blockCols = 2;
		Layout to = from;
		to.ranks = {0, 1, 2, 3};
		to.prow = to.pcol = 2;
		Schedule s = schedule(from, to);
		CHECK(s.steps == 4);  // rank 0 sends four times, once per step
		std::string text = describe(s);
		CHECK(text.find("0>0@") != std::string::npos);
		for (const Transfer& t : s.transfers) {
			REQUIRE(t.destination.size() == 1);
			CHECK(t.destination[0].offset == 0);
			CHECK(t.destination[0].count == 4);
			REQUIRE(t.source.size() == 2);
			std::int64_t r = t.to / 2, c = t.to % 2;
			CHECK(t.source[0].offset == r * 8 + c * 2);
			CHECK(t.source[1].offset == r * 8 + c * 2 + 4);
		}
	}

	TEST_CASE("bad layouts are refused with one line")
	{
		Layout wrong_counts = counted(Distribution::Block1d, {0, 1}, {1, 2});
		wrong_counts.counts.pop_back();
		CHECK(validate(wrong_counts) == "block1d layout: counts has 1 entries for 2 ranks");
		Layout twice = counted(Distribution::Independent, {0, 0}, {1, 1});
		CHECK(validate(twice) == "independent layout: rank 0 holds two slots");
		Layout sum = counted(Distribution::Block1d, {0}, {3});
		sum.globalCount = 4;
		CHECK(validate(sum) == "block1d layout: counts sum to 3, not global_count 4");
		Layout grid;
		grid.distribution = Distribution::BlockCyclic2d;
		grid.ranks = {0, 1, 2};
		grid.prow = 2;
		grid.pcol = 2;
		CHECK(validate(grid) == "block_cyclic2d layout: a 2 x 2 grid needs 4 ranks, not 3");
		Layout none;
		CHECK(validate(none) == "block1d layout: no ranks");
		Layout block;
		block.distribution = Distribution::BlockCyclic1d;
		block.ranks = {0};
		block.block = 0;
		CHECK(validate(block) == "block_cyclic1d layout: block must be at least 1");
		CHECK(validate(counted(Distribution::Block1d, {2, 0}, {1, 1})).empty());
	}

	TEST_CASE("schedule refuses mismatched layouts")
	{
		Layout a = counted(Distribution::Block1d, {0}, {4});
		Layout b = counted(Distribution::Independent, {0}, {4});
		Layout c = counted(Distribution::Block1d, {0}, {5});
		CHECK_THROWS_WITH_AS(schedule(a, b),
				     "old layout is block1d, new is independent: the kind cannot change",
				     std::invalid_argument);
		CHECK_THROWS_WITH_AS(schedule(a, c), "old layout holds 4 elements, new holds 5", std::invalid_argument);
		Layout bad = a;
		bad.counts = {-1};
		CHECK_THROWS_AS(schedule(bad, a), std::invalid_argument);
	}

	TEST_CASE("an empty array needs no transfers")
	{
		Layout from = counted(Distribution::Block1d, {0, 1}, {0, 0});
		Layout to = counted(Distribution::Block1d, {2}, {0});
		CHECK(schedule(from, to).transfers.empty());
	}
}
