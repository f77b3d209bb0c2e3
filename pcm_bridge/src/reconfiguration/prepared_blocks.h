// SPDX-License-Identifier: Apache-2.0
// A spawned process's blocks for the operation it was started for, allocated and faulted in while the application
// computes (SpawnPreparation, start_processes.h), so that the operation's data lands in memory already touched.
#pragma once

#include <mpi.h>

#include <vector>

#include "reconfiguration/buffers.h"

namespace malleo::pcm {

class PreparedBlocks
{
public:
	// In a spawned process, after joining `control`: receives what its spawner describes, allocates and faults in
	// the blocks, and tells the spawner it is ready.
	void prepare(MPI_Comm control);
	// In a joiner: a prepared block for `move` (same buffer, count, element and halo), taken, or null.
	void *take(const BufferMove &move);
	// Blocks prepared for another plan than the one carried out are of no use.
	void drop();

private:
	std::vector<BufferMove> blocks_;
};

} // namespace malleo::pcm
