// SPDX-License-Identifier: Apache-2.0
// One schedule function per distribution (schedule.cpp validates the layouts and dispatches here) and what they
// share: the per-slot-pair transfer table and the contention-free step assignment.
#pragma once

#include <cstdint>
#include <vector>

#include "redistribution/schedule.h"

namespace malleo::pcm::detail {

Schedule independentSchedule(const Layout& from, const Layout& to);
Schedule block1dSchedule(const Layout& from, const Layout& to);
Schedule blockCyclic1dSchedule(const Layout& from, const Layout& to);
Schedule blockCyclic2dSchedule(const Layout& from, const Layout& to);

// Elements a process holds along one dimension of a block-cyclic layout (ScaLAPACK's numroc): `extent` elements in
// blocks of `block`, dealt over `parts` processes, seen from process `index`.
std::int64_t blockCyclicExtent(std::int64_t extent, std::int64_t block, int parts, int index);

// Colours the transfers with steps so that within a step no rank sends twice and no rank receives twice, using as
// few steps as the busiest rank allows (König's theorem: a bipartite multigraph of maximum degree D has a proper
// D-edge-colouring). Sets `steps`.
void assignContentionFreeSteps(Schedule& schedule);

// Collects pieces per (old slot, new slot) pair into one transfer each, merging a piece into the previous segment
// when it continues it, so a run that is contiguous on both sides stays one segment however it was walked.
class TransferTable
{
public:
	TransferTable(const Layout& from, const Layout& to);

	void add(int old_slot, std::int64_t source_offset, int new_slot, std::int64_t destination_offset,
		 std::int64_t count);
	Schedule take();

private:
	const Layout& from_;
	const Layout& to_;
	std::vector<int> index_;  // old_slot * new slots + new_slot -> position in transfers_, -1 when none yet
	std::vector<Transfer> transfers_;
};

}  // namespace malleo::pcm::detail
