// SPDX-License-Identifier: Apache-2.0
#pragma once

// MPI_COMM_WORLD substitution (docs/pmpi-profiler.md, "The malleable world"): once the PCM bridge
// publishes its current world with MALLEO_Set_world, every wrapper hands that communicator to MPI
// where the application passed MPI_COMM_WORLD, so code written against MPI_COMM_WORLD keeps working
// after a split or merge. Only calls the application makes are substituted (depth 1): MPI's calls to
// itself and the bridge's PMPI_ calls see the real world.

#include "mpi_include.h"

namespace malleo::pmpi {

// Written only at reconfiguration points, where the bridge has every thread of the application
// outside MPI; read by every wrapper. MPI_COMM_NULL: no substitution.
extern MPI_Comm gWorld;
extern MPI_Fint gWorldFortran;

inline MPI_Comm currentWorld(MPI_Comm comm)
{
	return comm == MPI_COMM_WORLD && gWorld != MPI_COMM_NULL ? gWorld : comm;
}

// Fortran's MPI_COMM_WORLD is the handle MPI_Comm_c2f(MPI_COMM_WORLD) (0 in both MPIs).
MPI_Fint currentWorldFortran(MPI_Fint comm);

// The wrappers' first test: pass straight through to PMPI_ when profiling is off and no world is
// substituted (one load and a branch: the off-mode budget is 3 ns).
extern bool gBypass;
inline bool bypassWrappers()
{
	return gBypass;
}

// Recomputes gBypass after the mode or the world changed.
void updateBypass();

} // namespace malleo::pmpi
