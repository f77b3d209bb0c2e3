/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PCM API of El Maghraoui et al., "Malleable iterative MPI applications" (Table I, Figs. 6-7), over
 * libmalleo_pcm. A program written against the papers' skeleton compiles with two name fixes the paper's own text
 * needs: the status variable's type is PCM_Status_t (C cannot have a type and a function both named PCM_Status),
 * and PCM_Reconfigure always takes the address of the communicator. docs/pcm-api.md documents every call.
 */
#ifndef MALLEO_PCM_API_H
#define MALLEO_PCM_API_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PCM_API_VERSION_MAJOR 1
#define PCM_API_VERSION_MINOR 1

/* Return codes of the calls that can fail. */
#define PCM_SUCCESS 0
#define PCM_FAILURE (-1)

/* PCM_Process_Status: how this process came into the computation. */
#define PCM_STARTED 0  /* started by the launcher and active from the start */
#define PCM_MIGRATED 1 /* activated to replace a process that migrated; PCM_Load its state */
#define PCM_SPLITTED 2 /* activated by a split; PCM_Load its state */

/* PCM_Status: what the application must do at this iteration. */
typedef enum {
	PCM_NONE = 0,        /* nothing: compute */
	PCM_MIGRATE = 1,     /* this process migrates: PCM_Store its state, then PCM_Reconfigure */
	PCM_RECONFIGURE = 2, /* another process migrates: PCM_Reconfigure */
	PCM_SPLIT = 3,       /* every process calls PCM_Split (or PCM_Split_Collective) */
	PCM_MERGE = 4,       /* every process calls PCM_Merge_datacnts, then PCM_Merge (or _Collective) */
	PCM_FAILED = 5       /* an operation was asked for and did not happen: compute as before; see
				PCM_Error_string */
} PCM_Status_t;

/* Element types of PCM_Store and of the data buffers of PCM_Split and PCM_Merge. */
#define PCM_INT 0    /* int (32 bits) */
#define PCM_LONG 1   /* int64_t */
#define PCM_FLOAT 2  /* float */
#define PCM_DOUBLE 3 /* double */
#define PCM_CHAR 4   /* char */

/* Keys under which PCM_Split hands its arguments to the processes it activates (the names of Fig. 6). */
#define PCM_KEY_ITERATOR "iterator"   /* int: the iteration at which the process joins */
#define PCM_KEY_DATAWIDTH "datawidth" /* int: its number of columns (xDim) */
#define PCM_KEY_DATAROWS "datarows"   /* int: rows per column (yDim) */
#define PCM_KEY_DATA "myArray"        /* (xDim + 2) * yDim elements: ghost columns zeroed, then the columns */

/* The malleable communicator: the active processes in rank order. Updated by the reconfiguration calls. */
extern MPI_Comm PCM_COMM_WORLD;

/* MPI_Init, then the pool: a spare process returns only when a split or a migration activates it. */
int MPI_PCM_Init(int *argc, char ***argv);
#define PCM_MPI_Init MPI_PCM_Init /* the spelling of Fig. 6 */
/* Sets PCM_COMM_WORLD to the active communicator whatever `comm` is (Fig. 6 passes MPI_COMM_WORLD). */
int PCM_Init(MPI_Comm comm);
int PCM_Process_Status(void);
int PCM_Comm_rank(MPI_Comm comm, int *rank);

/* Collective over PCM_COMM_WORLD at the top of every iteration. */
int PCM_Status(MPI_Comm comm);

/* Saves `count` elements of `type` under `key` (the rank argument is accepted and ignored: keys are per process). */
int PCM_Store(int rank, const char *key, const void *data, int type, int count);
/* Copies the value stored under `key` to `data`; PCM_FAILURE when there is none. */
int PCM_Load(int rank, const char *key, void *data);

/* Collective over the active processes and the replacement. The migrating process does not return: it waits
 * for the end of the run without CPU and exits after MPI_Finalize. */
int PCM_Reconfigure(MPI_Comm *comm, const char *program);

/* Split: `data` holds (*xDim + 2) * *yDim elements of `type`, columns of *yDim elements with one ghost column on
 * each side; the columns are spread over more processes and rewritten in place (a split never makes a block
 * larger). Updates *xDim, *rank, *totalProcessors and *comm. */
int PCM_Split(void *data, int type, int *iterations, int *xDim, int *yDim, int *rank, int *totalProcessors,
	      MPI_Comm *comm, const char *program);
int PCM_Split_Collective(void *data, int type, int *iterations, int *xDim, int *yDim, int *rank,
			 int *totalProcessors, MPI_Comm *comm, const char *program);

/* Merge: every active process calls PCM_Merge_datacnts, which gives the elements its new buffer needs
 * (*mergecnts) and *merge_rank = its rank when it stays, -1 when it leaves; then PCM_Merge. A staying process
 * passes a new buffer of *mergecnts elements and gets its columns there; a leaving process does not return (as
 * the migrating one). If the merge fails, new_buffer receives the old columns unchanged and *xDim stays. */
int PCM_Merge_datacnts(int xDim, int yDim, int *mergecnts, int *merge_rank, MPI_Comm comm);
int PCM_Merge(void *data, int type, int *xDim, int *yDim, void *new_buffer, int mergecnts, int *rank,
	      int *totalProcessors, MPI_Comm *comm);
int PCM_Merge_Collective(void *data, int type, int *xDim, int *yDim, void *new_buffer, int mergecnts, int *rank,
			 int *totalProcessors, MPI_Comm *comm);

/* Not in the papers: memory for the distributed data (the columns and, for PCM_Merge, the new buffer) whose pages a
 * reconfiguration can hand to other processes on the host instead of copying them, unless MALLEO_PCM_SHARED_PAGES=off
 * (docs/pcm-api.md, "Pages taken over"); with it off, and for blocks of 1 MiB or less, calloc, realloc and free.
 * PCM_Alloc's memory reads as zeros, PCM_Realloc keeps the contents as realloc does, and only PCM_Free frees what
 * they return. Call them after MPI_PCM_Init. */
void *PCM_Alloc(size_t bytes);
void *PCM_Realloc(void *block, size_t bytes);
void PCM_Free(void *block);

/* Collective over PCM_COMM_WORLD at the end: releases the parked processes. Call before MPI_Finalize. */
int PCM_Finalize(MPI_Comm comm);
/* For a process that has left the computation: waits for the end of the run without CPU, finalizes MPI and
 * exits. The reconfiguration calls do this themselves for leaving processes; an active process gets PCM_FAILURE
 * (leaving is decided collectively, never alone). */
int PCM_Exit(void);

/* Not in the papers (API 1.1): the iterations the application has left, counting the one about to start, for
 * decision modules that weigh a reconfiguration's cost against the time it saves (sweetspot). Call it before
 * PCM_Status, at every iteration or once: the bridge counts it down by one a probe until it is said again. Any
 * process may call it; the one coordinating tells the agent. PCM_FAILURE for a negative count. */
int PCM_Remaining_iterations(long long remaining);

/* The reason of the last failed operation ("" when none). */
const char *PCM_Error_string(void);

#ifdef __cplusplus
}
#endif

#endif /* MALLEO_PCM_API_H */
