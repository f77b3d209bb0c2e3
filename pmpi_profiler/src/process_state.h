// SPDX-License-Identifier: Apache-2.0
#pragma once

// What every part of the profiler reads about this process: the profiling mode, its place in
// MPI_COMM_WORLD and when the library was loaded. It sits below everything else and includes none
// of it, so that the code that fills it in (lifecycle.cpp, at library load and in the MPI_Init
// wrapper) can call every other file without an include running back up.

#include <cstdint>

namespace malleo::pmpi {

// MALLEO_PROFILE: off makes every wrapper a straight call to PMPI; summary records everything
// except the per-peer matrix; full (the default) records everything.
enum class Mode : uint8_t { Off, Summary, Full };

extern Mode gMode;

inline bool profilingOff()
{
	return gMode == Mode::Off;
}

inline bool perPeer()
{
	return gMode == Mode::Full;
}

int worldSize();
int worldRank();
uint64_t startTicks();
// When MPI_Init returned to the application (0 before): the time between it and the report is what
// mpiP calls the application time.
uint64_t initReturnedTicks();

// Nanoseconds per tick measured from library load until now.
double nsPerTick();

// Written once each, before anything reads them: the start at library load, the world and the
// return of MPI_Init in the MPI_Init wrapper.
void setStart(uint64_t tsc, uint64_t ns);
void setWorld(int size, int rank);
void setInitReturned(uint64_t tsc);

} // namespace malleo::pmpi
