// SPDX-License-Identifier: Apache-2.0
#pragma once

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

} // namespace malleo::pmpi
