// SPDX-License-Identifier: Apache-2.0
// The bridge's environment, read once by each process before MPI_Init (whether to ask for MPI_THREAD_MULTIPLE
// depends on it). What is wrong with it is kept as lines, which only world rank 0 prints (Reconfigurator::start and
// configure): every process reads the same environment. docs/pcm-api.md documents the variables. The command
// sources (MALLEO_FORCE, the agent's) and the world publisher (MALLEO_WORLD) read their own.
#pragma once

#include <string>
#include <vector>

#include "plan/faults.h"
#include "plan/nodes.h"

namespace malleo::pcm {

// Where new processes come from (MALLEO_PCM_MODE): spare processes of an over-allocated launch, or
// MPI_Comm_spawn when a split or migration needs more than the spare ones.
enum class Mode { Pool, Spawn };

struct Settings {
	// MALLEO_POOL_ACTIVE: how many processes of a launch compute from the start; 0: all (not set, or not a
	// positive integer, which poolActiveText then holds: the message names the launch's size, known after MPI_Init).
	long poolActive = 0;
	std::string poolActiveText;
	// MALLEO_PCM_MODE, else pool where MALLEO_POOL_ACTIVE is set.
	Mode mode = Mode::Spawn;
	// Spawn mode under Open MPI with MALLEO_PCM_SPAWN not `wait`: MPI must be initialized with MPI_THREAD_MULTIPLE
	// so that new processes start on a helper thread while the application computes.
	bool backgroundSpawn = false;
	bool backgroundSpawnAsked = false;  // MALLEO_PCM_SPAWN=background
	double agreeTimeout = 10.0;         // MALLEO_AGREE_TIMEOUT, seconds
	bool verbose = false;               // MALLEO_PCM_VERBOSE: one line per completed operation
	bool hugePages = false;             // MALLEO_PCM_HUGE_PAGES=on
	// Unless MALLEO_PCM_SHARED_PAGES=off: blocks whose pages other processes can take over (buffers.h).
	bool sharedPages = true;
	bool sharedPagesAsked = false;      // MALLEO_PCM_SHARED_PAGES=on
	Faults faults;                      // MALLEO_FAULT
	NodeMap nodes;                      // MALLEO_NODES, MALLEO_NODE_AGENTS, MALLEO_CLUSTER_DIR
	std::vector<std::string> problems;  // one line each, in the order of the variables above
};

Settings readSettings();

} // namespace malleo::pcm
