// SPDX-License-Identifier: Apache-2.0
// What the bridge tells libmalleo_pmpi, when it is preloaded (pmpi_profiler/include/malleo_pmpi.h): whether this
// process computes or waits parked (MALLEO_Set_active), where the application's iterations begin and end
// (MALLEO_Iteration_probe), and, for applications that opt in (MALLEO_WORLD=malleable),
// which communicator the application's MPI_COMM_WORLD stands for (MALLEO_Set_world): the active processes'
// communicator, or none while the bridge works and in a process that is not active.
#pragma once

#include <mpi.h>

namespace malleo::pcm {

// Tells libmalleo_pmpi, when it is preloaded, whether this process computes or waits parked (MALLEO_Set_active:
// the agent shows it). Local; nothing without the library.
void publishActive(bool active);

// A probe of an active process, or the end of its run: an iteration boundary for libmalleo_pmpi, when it is
// preloaded (MALLEO_Iteration_probe; its iterations count from the first probe). Local; nothing without the library.
void publishProbe();

// Reads MALLEO_WORLD; `report`: this process says once on stderr what is wrong (a bad value, or the opt-in without
// the preloaded library).
void configureWorldPublisher(bool report);

// MALLEO_Set_world(world) when the application opted in and the library is there; nothing otherwise. Local.
void publishWorld(MPI_Comm world);

} // namespace malleo::pcm
