/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What a program may call in libmalleo_pmpi. Everything is optional: declared weak, so a program
 * built with this header runs unchanged without the preload (test `if (MALLEO_Iteration_mark)`
 * before calling).
 */

#define MALLEO_PMPI_VERSION_MAJOR 0
#define MALLEO_PMPI_VERSION_MINOR 1

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

/* MALLEO_PMPI_VERSION_MAJOR * 1000 + MALLEO_PMPI_VERSION_MINOR of the preloaded library. */
int MALLEO_Pmpi_version(void) MALLEO_PMPI_WEAK;

#ifdef __cplusplus
}
#endif
