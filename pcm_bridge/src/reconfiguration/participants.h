// SPDX-License-Identifier: Apache-2.0
// The processes of one operation (the plan's before and after), in a communicator of their own for its data: the
// union communicator, made at the start of the operation (operation.cpp) and freed at its end.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <vector>

namespace malleo::pcm {

struct Participants {
	MPI_Comm comm = MPI_COMM_NULL;
	std::vector<int> all;  // world ranks, sorted: a process's rank in `comm` is its index here
	int me = 0;            // this process's rank in `comm`
	int root = 0;          // the coordinator's rank in `comm`
	int newSlot = -1;      // this process's slot after the plan; -1 when it leaves
	bool joiner = false;   // this process becomes active

	int rankOf(int world_rank) const
	{
		return static_cast<int>(std::lower_bound(all.begin(), all.end(), world_rank) - all.begin());
	}
};

} // namespace malleo::pcm
