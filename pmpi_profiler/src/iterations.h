// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace malleo::pmpi {

struct IterationEnd {
	uint64_t ticks;	   // when the iteration ended
	uint64_t mpiTicks; // the marking thread's time in MPI so far
};

// The start of the first iteration: MPI_Init's return.
void startIterations();
std::vector<IterationEnd> iterationEnds(IterationEnd *firstStart);
// The ends from index `from` on, and in *previous the end (or the first start) just before them: the
// agent reporter's deltas, without copying the whole history under the lock the marks take.
std::vector<IterationEnd> iterationEndsSince(size_t from, IterationEnd *previous);

} // namespace malleo::pmpi
