// SPDX-License-Identifier: Apache-2.0
// What `malleo run` was asked (docs/cli.md, "malleo run"). Numbers stay text until runCommand reads them, so that a
// bad one is refused in words rather than by the parser's range message.
#pragma once

#include <string>
#include <vector>

#include "global_options.h"

namespace malleo::cli {

struct RunOptions {
	std::string ranks;			  // -n (or -np): the active ranks
	std::string maxRanks;			  // --max: launch this many, -n of them active (PCM bridge pool mode)
	std::string mpi;			  // openmpi or mpich; empty: the one the program is linked with
	std::string mode;			  // --mode pool|spawn; empty: $MALLEO_PCM_MODE, else runCommand's
	std::string sparesOn;			  // --spares-on N1,N2,...: the cluster nodes that get the spares
	std::string activeOn;			  // --active-on N1,N2,...: the cluster nodes that get the active ranks
	std::string hosts;			  // H1,H2,...: the launcher's host list
	std::string launcher;			  // --launcher mpirun|srun; empty: mpirun
	std::string profileDir;			  // empty: $MALLEO_PROFILE_DIR, else the current directory
	std::vector<std::string> launcherOptions; // options malleo does not know, in their order
	std::vector<std::string> command;
	bool json = false; // at the end, one JSON line on stdout: the exit status and the reports
};

int runCommand(const GlobalOptions &options, const RunOptions &run);

} // namespace malleo::cli
