// SPDX-License-Identifier: Apache-2.0
// The MPI launcher of `malleo run`: its command line (Open MPI's mpirun or MPICH's hydra, one MPMD block per group
// of ranks placed alike) and its run, with the signals that would end malleo passed on to it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "failure.h"
#include "netns_hosts.h"
#include "run_placement.h"

namespace malleo::cli {

struct LaunchPlan {
	std::string mpi;					// openmpi or mpich
	bool srun = false;					// Slurm's srun instead of the MPI's launcher
	std::string hosts;					// --hosts, given to every block
	std::vector<std::string> options;			// the user's launcher options, in their order
	std::vector<std::pair<std::string, std::string>> env; // for every rank
	std::vector<RankBlock> blocks;				// at least one
	std::vector<std::string> command;			// the program and its arguments
	std::optional<HostNetwork> network; // a cluster of hosts: the launcher runs in its launch namespace and starts
					    // each block on its block's host through the cluster's rsh agent
	std::string rankfile;		    // Open MPI, several blocks on a cluster of hosts: each rank's host (below)
};

// Open MPI's rankfile for blocks on hosts: "rank R=HOST slot=CPUS", one line a rank. Its mapper continues each app
// context from where the previous one stopped, so per-block --host lists put ranks on other blocks' hosts.
std::optional<Failure> writeRankfile(const std::string &path, const std::vector<RankBlock> &blocks);

std::vector<std::string> launcherCommand(const LaunchPlan &plan);

struct LaunchEnd {
	int status = 0; // as a shell says it: the exit status, or 128 + the signal that ended malleo or the launcher
	int signal = 0; // the first SIGINT or SIGTERM malleo received and passed on, else 0
};

// Runs argv and waits for it. SIGINT and SIGTERM sent to malleo go to the launcher, which ends its ranks, and are
// waited out; one typed at the terminal reached the launcher already (it shares malleo's process group) and is not
// sent twice. Nullopt with the failure said when argv cannot be started.
// In host (netns_hosts.h) when given, with its TMPDIR or (hostTmpdir false) none.
std::optional<LaunchEnd> runLauncher(const std::vector<std::string> &argv, Failure &failure,
				     const NetHost *host = nullptr, bool hostTmpdir = true);

} // namespace malleo::cli
