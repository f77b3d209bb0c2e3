/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What a program may call in libmalleo_pmpi. Everything is optional: declared weak, so a program
 * built with this header runs unchanged without the preload (test `if (MALLEO_Iteration_mark)`
 * before calling).
 */

#ifdef MALLEO_PMPI_BUILDING
/* The library uses MPI's C API only (src/mpi_include.h). */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#define MALLEO_PMPI_VERSION_MAJOR 0
#define MALLEO_PMPI_VERSION_MINOR 4

#ifdef MALLEO_PMPI_BUILDING
#define MALLEO_PMPI_WEAK __attribute__((visibility("default")))
#else
#define MALLEO_PMPI_WEAK __attribute__((weak))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Ends the current iteration of the application's main loop (the first began when MPI_Init
 * returned). */
void MALLEO_Iteration_mark(void) MALLEO_PMPI_WEAK;

/* For the PCM bridge, which calls it at each probe (the top of an iteration) and at PCM_Finalize: the first call
 * starts an iteration, each later one ends it and starts the next. Counts only until the program calls
 * MALLEO_Iteration_mark: from then on the program's own marks are its iterations, the probes' are dropped. */
void MALLEO_Iteration_probe(void) MALLEO_PMPI_WEAK;

/* From now on every MPI call of the application that names MPI_COMM_WORLD gets `world` instead
 * (MPI_Abort excepted: it ends the whole job); MPI_COMM_NULL or MPI_COMM_WORLD stops substituting.
 * Local, not collective: the PCM bridge calls it on each process of the new world after every
 * reconfiguration, with no other thread inside MPI. Returns MPI_SUCCESS, or MPI_ERR_COMM for an
 * intercommunicator. Fortran: CALL MALLEO_SET_WORLD(COMM, IERROR). */
int MALLEO_Set_world(MPI_Comm world) MALLEO_PMPI_WEAK;

/* Whether this process takes part in the computation (nonzero, as from MPI_Init on) or waits parked out of it (0):
 * sent to the local agent with every report (`active`, the ACTIVE column of `malleo apps`). The PCM bridge calls it
 * when a process parks and when it is activated. A parked process is in no iteration: 0 drops the iteration under
 * way, and 1 starts one. */
void MALLEO_Set_active(int active) MALLEO_PMPI_WEAK;

/* The application id this process reports to the local agent with (`<program>-<job>`, docs/pmpi-profiler.md),
 * set in MPI_Init whether or not an agent is configured; NULL before. The PCM bridge polls the agent for
 * commands under this id, so `malleo force APP` names the application `malleo apps` shows. */
const char *MALLEO_App_id(void) MALLEO_PMPI_WEAK;

/* The local agent's endpoint this process reports to (MALLEO_AGENT, else the default socket when it exists), set in
 * MPI_Init; NULL before, and when no agent is configured. The PCM bridge polls that same agent for commands. */
const char *MALLEO_Agent_endpoint(void) MALLEO_PMPI_WEAK;

/* MALLEO_PMPI_VERSION_MAJOR * 1000 + MALLEO_PMPI_VERSION_MINOR of the preloaded library. */
int MALLEO_Pmpi_version(void) MALLEO_PMPI_WEAK;

#ifdef __cplusplus
}
#endif
