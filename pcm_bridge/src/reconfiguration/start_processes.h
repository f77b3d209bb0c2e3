// SPDX-License-Identifier: Apache-2.0
// Starting processes with MPI_Comm_spawn and connecting every process of the control communicator to them. Made
// without touching the reconfigurator, so that it can run on a helper thread while the application computes
// (spawn.cpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "reconfiguration/parking.h"
#include "reconfiguration/places.h"

namespace malleo::pcm {

// What starting processes produced.
struct SpawnOutcome {
	bool ok = false;
	std::string why;                       // when not ok
	MPI_Comm control = MPI_COMM_NULL;      // the control communicator with the new processes at its end
	Places places;                         // of every process, new ones included
};

// What the root tells the new processes once they are connected (spawn.cpp, Reconfigurator::preparation): the
// buffers of the operation they start for (a manifest without replicated values) and, for each new process in
// world-rank order, its count of each buffer after the operation, so that it allocates and faults in its blocks
// while the application goes on (prepared_blocks.h). Empty when the program registered no buffers (the PCM C API).
struct SpawnPreparation {
	std::vector<unsigned char> manifest;
	std::vector<std::int64_t> counts;  // [new process][buffer]
};

// Collective over `control` (the parents) and the new processes (Reconfigurator::joinParents): the root starts
// `count` processes of `words` (an env(1) command line that sets their MALLEO_NODE), all merge them in at the end of
// a new control communicator, and the root sends each its part of `preparation`.
SpawnOutcome startProcesses(MPI_Comm control, int root, int count, std::vector<std::string> words, int world_rank,
			    const ThreadAddress &self, SpawnPreparation preparation, const std::string &host = {});

// Measured with Open MPI 4.1.4: once a run has processes of two spawn calls, MPI_Finalize of a spawned process
// writes to a connection another job has already closed, and SIGPIPE killed it after the run's result was out
// (mpirun then exits with 141; in every run of 4 tried). Ignored, the write fails with EPIPE, which Open MPI takes
// for the closed connection it is, and the run ends cleanly. Only processes of runs that spawn are affected.
void ignoreBrokenPipes();

} // namespace malleo::pcm
