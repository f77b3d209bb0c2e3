// SPDX-License-Identifier: Apache-2.0
// Which MPI a program is linked with, from what `ldd` lists (as pmpi_profiler/malleo-pmpi does): the profiler
// preloaded into its ranks and the launcher must be that MPI's, or the ranks die in MPI_Init with an invalid
// communicator or a segfault.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace malleo::cli {

struct ProgramMpi {
	std::string path;	       // the program as the launcher will find it (PATH searched)
	std::vector<std::string> mpis; // "openmpi", "mpich": those its libraries name; empty for none
};

// Nullopt when the program cannot be found (a relative name is looked up in PATH, as execvp does).
std::optional<ProgramMpi> programMpi(const std::string &program);

} // namespace malleo::cli
