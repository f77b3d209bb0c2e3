// SPDX-License-Identifier: Apache-2.0
// Where processes run: the node each one is on (the bridge's notion: MALLEO_NODE, else the MPI processor name), the
// thread of each that parks (parking.h), and the CPUs a process on a described node runs on (nodes.h).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "plan/nodes.h"
#include "reconfiguration/parking.h"

namespace malleo::pcm {

// This process's node: MALLEO_NODE, else the MPI processor name.
std::string currentNode();

// Where every process of a control communicator runs, by world rank: its node (currentNode()) and the thread that
// parks there.
struct Places {
	std::vector<std::string> nodes;
	std::vector<ThreadAddress> threads;
};
// Collective over `control`: each process tells its own, `self` being its parking thread.
Places gatherPlaces(MPI_Comm control, const ThreadAddress &self);

// A process on a node `nodes` describes runs on that node's CPUs, every thread of it (MPI_Init may have started
// some, and Open MPI may have bound the process already); one stderr line, naming `world_rank`, when it cannot.
void bindToNode(const NodeMap &nodes, int world_rank);

} // namespace malleo::pcm
