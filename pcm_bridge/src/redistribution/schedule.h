// SPDX-License-Identifier: Apache-2.0
// Redistribution schedules: pure functions from (old layout, new layout) to the transfers that turn one into the
// other. No MPI here, so every distribution is tested without it; executor.h runs a schedule over MPI.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace malleo::pcm {

// How a registered buffer is spread over the processes (seed 000 Figs. 3-4, seed 003).
enum class Distribution {
	Independent,    // any process may hold any items (astro): only the counts matter
	Block1d,        // contiguous blocks in rank order with adjacency (heat2d columns)
	BlockCyclic1d,  // blocks of `block` elements dealt round-robin over the processes
	BlockCyclic2d,  // a rows x cols matrix in block_rows x block_cols blocks over a prow x pcol process grid
};

// Where the data lives. Positions are layout slots 0..P-1; `ranks[p]` is the rank, in the communicator that runs the
// schedule, of the process in slot p (old and new layouts name ranks of the same communicator: the union of the old
// and the new processes during a reconfiguration).
// A rank holds at most one slot of a layout. Local buffers are in global order: block1d slot p holds the elements
// after those of slots 0..p-1; block_cyclic1d holds its blocks in increasing block index; block_cyclic2d holds its
// local matrix row-major (local row, then local column). `counts` is read only by independent and block1d.
struct Layout {
	Distribution distribution = Distribution::Block1d;
	std::vector<int> ranks;
	std::int64_t globalCount = 0;       // elements in all (independent, block1d, block_cyclic1d)
	std::vector<std::int64_t> counts;   // per slot (independent, block1d); sums to globalCount
	std::int64_t block = 1;             // block_cyclic1d
	std::int64_t rows = 0, cols = 0;    // block_cyclic2d, in elements
	std::int64_t blockRows = 1, blockCols = 1;
	int prow = 1, pcol = 1;             // process grid, slot = r * pcol + c
};

// A run of consecutive elements in a process's local buffer.
struct Segment {
	std::int64_t offset = 0;  // in elements, from the start of the local buffer
	std::int64_t count = 0;
};

// Elements moved from one rank to another. The source segments, read in order, give the destination segments,
// written in order; both lists hold the same number of elements. A transfer with from == to is a local copy.
// Transfers of the same step may run at once without two of them sharing a sender or a receiver (contention-free
// steps, seed 003); schedules without that property put everything in step 0.
struct Transfer {
	int from = 0;
	int to = 0;
	int step = 0;
	std::vector<Segment> source;
	std::vector<Segment> destination;
};

struct Schedule {
	std::vector<Transfer> transfers;
	int steps = 1;
};

// Checks a layout for consistency; returns an empty string or one line saying what is wrong.
std::string validate(const Layout& layout);

// The transfers that turn `from` into `to`. Both layouts have the same distribution kind and global size
// (throws std::invalid_argument otherwise, with the reason).
Schedule schedule(const Layout& from, const Layout& to);

// Walks a transfer's source and destination segments together: `chunk(source_offset, destination_offset, count)`
// for each run that is contiguous on both sides, in elements.
template<typename Chunk>
void forEachChunk(const Transfer& transfer, Chunk chunk)
{
	std::size_t s = 0, d = 0;
	std::int64_t s_done = 0, d_done = 0;
	while (s < transfer.source.size() && d < transfer.destination.size()) {
		const Segment& source = transfer.source[s];
		const Segment& destination = transfer.destination[d];
		std::int64_t count = std::min(source.count - s_done, destination.count - d_done);
		chunk(source.offset + s_done, destination.offset + d_done, count);
		s_done += count;
		d_done += count;
		if (s_done == source.count) {
			++s;
			s_done = 0;
		}
		if (d_done == destination.count) {
			++d;
			d_done = 0;
		}
	}
}

// Whether rank `rank`'s old buffer can serve as its new one: every element it gets from itself is one it already
// holds, at the same offset in its local buffer (a block1d split's process that keeps the start of its block), and
// every element it gets from another rank lands at offset `held` or beyond, past the `held` elements it holds, in
// room the buffer has (a merge's survivor whose buffer kept its size after a split). By default it gets nothing
// from others.
bool keepsInPlace(const Schedule& schedule, int rank, std::int64_t held = INT64_MAX);

// The elements a segment list holds.
std::int64_t elementCount(const std::vector<Segment>& segments);

// Elements [skip, skip + count) of a segment list, read in order.
std::vector<Segment> slice(const std::vector<Segment>& segments, std::int64_t skip, std::int64_t count);

// Local element count of the process in slot `slot` of a layout.
std::int64_t localCount(const Layout& layout, int slot);

}  // namespace malleo::pcm
