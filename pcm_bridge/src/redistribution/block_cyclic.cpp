// SPDX-License-Identifier: Apache-2.0
// 1D block-cyclic and 2D block-cyclic (checkerboard) layouts, as ReSHAPE redistributes them (seed 003).
//
// 1D: global element g lies in block k = g / block, on slot k mod P, at local offset (k / P) * block + g mod block.
// 2D: the same along each dimension; process (r, c) sits in slot r * pcol + c and stores its local matrix row-major
// (local row, then local column), as the global matrix is.
//
// The segments come from walking the global index space in runs over which neither the old nor the new owner
// changes: a run ends at the next block boundary of either layout. Each run is a piece of one (old slot, new slot)
// transfer, contiguous in both local buffers, and a piece that continues the previous one merges into it, so the
// segments are exact and as few as the layouts allow — one per run only where block-cyclic truly scatters the data.
// Walking costs O(N / min(old block, new block)) per dimension pair; the old and new layouts may use different
// block sizes and grids.
//
// ReSHAPE builds its contention-free schedule from a table of lcm(P, Q) rows; here the same property comes from
// colouring the (sender, receiver) pairs directly (contention_free_steps.cpp), which needs no divisibility and
// gives the fewest steps possible: the largest number of partners of any one rank.
#include <algorithm>

#include "redistribution/distribution_schedules.h"

namespace malleo::pcm::detail {

std::int64_t blockCyclicExtent(std::int64_t extent, std::int64_t block, int parts, int index)
{
	if (extent <= 0)
		return 0;
	std::int64_t blocks = (extent - 1) / block + 1;
	std::int64_t mine = blocks / parts + (index < blocks % parts ? 1 : 0);
	std::int64_t count = mine * block;
	std::int64_t tail = extent % block;
	if (tail != 0 && (blocks - 1) % parts == index)
		count -= block - tail;
	return count;
}

namespace {

// Where a global index lies along one block-cyclic dimension.
struct Place {
	int part;
	std::int64_t offset;  // local index along this dimension
	std::int64_t run;     // elements left in its block
};

Place place(std::int64_t global, std::int64_t block, int parts)
{
	std::int64_t k = global / block;
	std::int64_t within = global % block;
	return {static_cast<int>(k % parts), (k / parts) * block + within, block - within};
}

// A stretch of one dimension over which the old and the new owner stay the same.
struct Run {
	std::int64_t length;
	Place old_place;
	Place new_place;
};

std::vector<Run> runs(std::int64_t extent, std::int64_t old_block, int old_parts, std::int64_t new_block, int new_parts)
{
	std::vector<Run> result;
	for (std::int64_t g = 0; g < extent;) {
		Place o = place(g, old_block, old_parts);
		Place n = place(g, new_block, new_parts);
		std::int64_t length = std::min({o.run, n.run, extent - g});
		result.push_back({length, o, n});
		g += length;
	}
	return result;
}

}  // namespace

Schedule blockCyclic1dSchedule(const Layout& from, const Layout& to)
{
	TransferTable table(from, to);
	int old_parts = static_cast<int>(from.ranks.size());
	int new_parts = static_cast<int>(to.ranks.size());
	for (std::int64_t g = 0; g < from.globalCount;) {
		Place o = place(g, from.block, old_parts);
		Place n = place(g, to.block, new_parts);
		std::int64_t length = std::min({o.run, n.run, from.globalCount - g});
		table.add(o.part, o.offset, n.part, n.offset, length);
		g += length;
	}
	Schedule result = table.take();
	assignContentionFreeSteps(result);
	return result;
}

Schedule blockCyclic2dSchedule(const Layout& from, const Layout& to)
{
	std::vector<std::int64_t> old_local_cols(static_cast<std::size_t>(from.pcol));
	for (int c = 0; c < from.pcol; ++c)
		old_local_cols[static_cast<std::size_t>(c)] =
		    blockCyclicExtent(from.cols, from.blockCols, from.pcol, c);
	std::vector<std::int64_t> new_local_cols(static_cast<std::size_t>(to.pcol));
	for (int c = 0; c < to.pcol; ++c)
		new_local_cols[static_cast<std::size_t>(c)] = blockCyclicExtent(to.cols, to.blockCols, to.pcol, c);

	std::vector<Run> column_runs = runs(from.cols, from.blockCols, from.pcol, to.blockCols, to.pcol);
	TransferTable table(from, to);
	// Row by row, so each transfer's pieces arrive in local row-major order on both sides and merge wherever
	// whole local rows move together.
	for (std::int64_t row = 0; row < from.rows; ++row) {
		Place o = place(row, from.blockRows, from.prow);
		Place n = place(row, to.blockRows, to.prow);
		for (const Run& run : column_runs) {
			std::size_t oc = static_cast<std::size_t>(run.old_place.part);
			std::size_t nc = static_cast<std::size_t>(run.new_place.part);
			table.add(o.part * from.pcol + run.old_place.part,
				  o.offset * old_local_cols[oc] + run.old_place.offset,
				  n.part * to.pcol + run.new_place.part,
				  n.offset * new_local_cols[nc] + run.new_place.offset, run.length);
		}
	}
	Schedule result = table.take();
	assignContentionFreeSteps(result);
	return result;
}

}  // namespace malleo::pcm::detail
