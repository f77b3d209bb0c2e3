/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 2D heat diffusion, the papers' malleable MPI case (seed 001, Figs. 6-7): the grid's columns are spread in
 * blocks over the processes, each iteration exchanges one ghost column with each neighbour and takes a Jacobi
 * step. Written against the PCM API, so it splits, merges and migrates when told to (MALLEO_FORCE or the agent).
 *
 *   heat2d [--rows R] [--columns C] [--iterations N] [--progress K] [--times] [--pace MS] [--world pcm|mpi]
 *          [--checkpoint FILE --checkpoint-at K] [--restart FILE]    (stop-restart baseline, checkpoint.h)
 *
 * --pace MS makes every iteration last at least MS milliseconds (each process sleeps out the rest after its step),
 * so a run lasts a known wall time whatever the MPI and the process count: demos, and commands sent by hand or by
 * tests while it runs. It only waits, so it changes nothing in the result.
 *
 * --world mpi computes on MPI_COMM_WORLD instead of PCM_COMM_WORLD (ghost exchange, final gather, ranks and
 * sizes): code written against MPI_COMM_WORLD, which stands for the active processes only under
 * MALLEO_WORLD=malleable with libmalleo_pmpi preloaded (docs/pcm-api.md). Otherwise heat2d stops with exit code 2.
 *
 * At the end rank 0 gathers the grid in global column order and prints a 64-bit FNV-1a checksum of its bytes:
 * every point's update reads the same operands in the same order whatever the partition, so a run reconfigured
 * any number of times prints the checksum of a static run.
 */
#define _POSIX_C_SOURCE 200809L /* clock_nanosleep */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "pcm_api.h"

#include "checkpoint.h"
#include "options.h"

/* The initial temperature of a point: a hot left wall, the rest a fixed pattern so every column differs. */
static double initial(int column, int row)
{
	if (column == 0)
		return 100.0;
	return (double)((column * 31 + row * 17) % 97) / 8.0;
}

/* The communicator heat2d computes on: PCM_COMM_WORLD, or with --world mpi MPI_COMM_WORLD if it is the active
 * processes' communicator (MALLEO_WORLD=malleable, libmalleo_pmpi preloaded); MPI_COMM_NULL if it is not, which
 * every active process finds alike (the comparison is local), so they all stop together. */
static MPI_Comm computing_comm(const struct options *o)
{
	int same = MPI_UNEQUAL;
	if (!o->world_mpi)
		return PCM_COMM_WORLD;
	MPI_Comm_compare(MPI_COMM_WORLD, PCM_COMM_WORLD, &same);
	return same == MPI_IDENT || same == MPI_CONGRUENT ? MPI_COMM_WORLD : MPI_COMM_NULL;
}

static int stop_world_mismatch(void)
{
	int rank = 0, world = 0, active = 0;
	MPI_Comm_rank(PCM_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world);
	MPI_Comm_size(PCM_COMM_WORLD, &active);
	if (rank == 0)
		fprintf(stderr, "heat2d: --world mpi: MPI_COMM_WORLD (%d processes) is not the %d active processes; "
				"needs MALLEO_WORLD=malleable and libmalleo_pmpi preloaded\n", world, active);
	PCM_Finalize(PCM_COMM_WORLD);
	MPI_Finalize();
	return 2;
}

/* Global index of this process's first column (blocks are in rank order). */
static int first_column(int columns_here, MPI_Comm comm)
{
	int offset = 0, rank = 0;
	MPI_Comm_rank(comm, &rank);
	MPI_Exscan(&columns_here, &offset, 1, MPI_INT, MPI_SUM, comm);
	return rank == 0 ? 0 : offset;
}

static void exchange_ghosts(double *grid, int xDim, int rows, int rank, int size, MPI_Comm comm)
{
	const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
	const int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
	MPI_Sendrecv(grid + (size_t)1 * rows, rows, MPI_DOUBLE, left, 1, grid + (size_t)(xDim + 1) * rows, rows,
		     MPI_DOUBLE, right, 1, comm, MPI_STATUS_IGNORE);
	MPI_Sendrecv(grid + (size_t)xDim * rows, rows, MPI_DOUBLE, right, 2, grid, rows, MPI_DOUBLE, left, 2, comm,
		     MPI_STATUS_IGNORE);
}

static void step(const double *prev, double *next, int xDim, int rows, int first, int columns)
{
	for (int i = 1; i <= xDim; ++i) {
		const int global = first + i - 1;
		const double *c = prev + (size_t)i * rows;
		double *out = next + (size_t)i * rows;
		if (global == 0 || global == columns - 1) {
			memcpy(out, c, sizeof(double) * (size_t)rows);
			continue;
		}
		out[0] = c[0];
		out[rows - 1] = c[rows - 1];
		for (int r = 1; r < rows - 1; ++r)
			out[r] = 0.25 * (c[r - rows] + c[r + rows] + c[r - 1] + c[r + 1]);
	}
}

/* --pace: when the iteration starting now may end, on the monotonic clock (the wall clock may jump). */
static struct timespec pace_deadline(int pace)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += pace / 1000;
	t.tv_nsec += (long)(pace % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec += 1;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* Sleeps rather than spins, so a paced run leaves the cores to the others (it returns at once if past). */
static void sleep_until(const struct timespec *deadline)
{
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL) == EINTR)
		;
}

static uint64_t fnv1a(const unsigned char *bytes, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; ++i) {
		h ^= bytes[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* Ends the run on every process: the exit code `code`. */
static int finish(int code)
{
	PCM_Finalize(PCM_COMM_WORLD);
	MPI_Finalize();
	return code;
}

/* The options (options.h). -1: go on; else the exit code (0 after --help, 2 on bad options): every process parses
 * the same arguments, so all stop here together. */
static int parse_arguments(int *argc, char **argv, int rank, struct options *o, struct checkpointing *ck)
{
	const int parsed = read_options(argc, argv, rank, o, ck);
	return parsed ? finish(parsed > 0 ? 0 : 2) : -1;
}

/* A process of the launch: its block of columns, from the initial temperatures or the restart file, and the
 * iteration to start at. -1: go on; else the exit code (too few columns, an unusable restart file). */
static int start_grid(const struct options *o, const struct checkpointing *ck, int rank, int totalProcessors,
		      int yDim, int *xDim, double **prevData, int *current_iteration)
{
	int world = 0;
	MPI_Comm_size(MPI_COMM_WORLD, &world);
	if (o->columns < world) {
		if (rank == 0)
			fprintf(stderr, "heat2d: %d columns cannot feed up to %d processes\n", o->columns, world);
		return finish(2);
	}
	*current_iteration = 0;
	*xDim = o->columns / totalProcessors + (rank < o->columns % totalProcessors);
	*prevData = PCM_Alloc((size_t)(*xDim + 2) * yDim * sizeof(double));
	const int first = first_column(*xDim, PCM_COMM_WORLD);
	for (int i = 1; i <= *xDim && !ck->restart; ++i)
		for (int r = 0; r < yDim; ++r)
			(*prevData)[(size_t)i * yDim + r] = initial(first + i - 1, r);
	if (ck->restart &&
	    (*current_iteration = restart_from_checkpoint(ck, *prevData, *xDim, yDim, o->columns)) < 0) {
		PCM_Free(*prevData);
		return finish(2);
	}
	return -1;
}

/* The communicator to compute on, the process count, the process's block of columns (its rows in `yDim_out`) and
 * the iteration to start at: from the start (start_grid), or, for a process a migration started, what its
 * predecessor stored (PCM_Store in main's loop). -1: go on; else the exit code. */
static int set_up_grid(const struct options *o, const struct checkpointing *ck, MPI_Comm *comm, int *rank,
		       int *totalProcessors, int *xDim, int *yDim_out, double **prevData, int *current_iteration)
{
	const int yDim = *yDim_out = o->rows;
	if ((*comm = computing_comm(o)) == MPI_COMM_NULL)
		return stop_world_mismatch();
	MPI_Comm_size(PCM_COMM_WORLD, totalProcessors);
	if (PCM_Process_Status() == PCM_STARTED)
		return start_grid(o, ck, *rank, *totalProcessors, yDim, xDim, prevData, current_iteration);
	PCM_Comm_rank(PCM_COMM_WORLD, rank);
	PCM_Load(*rank, "iterator", current_iteration);
	PCM_Load(*rank, "datawidth", xDim);
	*prevData = PCM_Alloc((size_t)(*xDim + 2) * yDim * sizeof(double));
	PCM_Load(*rank, "myArray", *prevData);
	return -1;
}

/* What a reconfiguration call said when it failed, printed by rank 0 (`rank` is read after the call, which may
 * change it). */
static void report_failure(int rc, const int *rank)
{
	if (rc != PCM_SUCCESS && *rank == 0)
		fprintf(stderr, "heat2d: %s\n", PCM_Error_string());
}

/* Rank 0's lines at the top of an iteration: the process count when it changed or was not said yet (`announce`,
 * cleared), and --progress. A process that a split or a migration activated joins inside the probe of that
 * operation, which the bridge answers for it: when it is rank 0 (a migration's replacement of rank 0) the
 * operation's line is its to print (main's `announce`). */
static void print_iteration(const struct options *o, int rank, int iteration, int totalProcessors, int changed,
			    int *announce)
{
	if (rank == 0 && (changed || *announce))
		printf("iteration %d: %d processes\n", iteration, totalProcessors);
	*announce = 0;
	if (o->progress && rank == 0 && iteration % o->progress == 0)
		printf("iteration %d of %d on %d processes\n", iteration, o->iterations, totalProcessors);
}

/* An iteration's start: its wall time (--times) and, with --pace, when it may end. The iteration's time counts
 * from its top: a reconfiguration at its probe is part of it. */
struct iteration_clock {
	struct timespec deadline;
	double start;
};

static struct iteration_clock start_iteration(int pace)
{
	struct iteration_clock clock = {pace_deadline(pace), MPI_Wtime()};
	return clock;
}

/* The end of an iteration: --pace's wait, and --times's line (rank 0). */
static void end_iteration(const struct options *o, const struct iteration_clock *clock, int iteration, int rank,
			  int totalProcessors)
{
	if (o->pace)
		sleep_until(&clock->deadline);
	if (o->times && rank == 0)
		printf("time: iteration %d %.6f s on %d processes\n", iteration, MPI_Wtime() - clock->start,
		       totalProcessors);
}

/* After a reconfiguration: the second grid holds at least the process's new columns. Each step rewrites its columns
 * and each exchange its ghosts, so it is kept when it is large enough and grown by PCM_Realloc otherwise, not freed
 * and allocated anew: its pages are in memory already. On a VM with shadow page tables a new grid's first touch
 * costs about 10 us a page and freeing a large one slows the next pass over all memory (docs/performance.md,
 * "Machines"). */
static void grow_next(double **nextData, size_t *nextCapacity, int xDim, int yDim)
{
	const size_t needed = (size_t)(xDim + 2) * yDim;
	if (needed <= *nextCapacity)
		return;
	double *grown = PCM_Realloc(*nextData, needed * sizeof(double));
	if (!grown) {
		fprintf(stderr, "heat2d: out of memory for %zu columns\n", (size_t)xDim);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	*nextData = grown;
	*nextCapacity = needed;
}

/* After the probe, on every process: the communicator to compute on (MPI_COMM_NULL: with --world mpi,
 * MPI_COMM_WORLD is no longer the active processes') and, after a reconfiguration, this process's rank, the process
 * count, room for its columns in the second grid and its first column. */
static MPI_Comm after_probe(const struct options *o, int changed, int xDim, int yDim, int *rank, int *totalProcessors,
			    double **nextData, size_t *nextCapacity, int *first)
{
	const MPI_Comm comm = computing_comm(o);
	if (comm == MPI_COMM_NULL || !changed)
		return comm;
	MPI_Comm_rank(comm, rank);
	MPI_Comm_size(comm, totalProcessors);
	grow_next(nextData, nextCapacity, xDim, yDim);
	*first = first_column(xDim, comm);
	return comm;
}

/* The step's result becomes the grid the next iteration reads. */
static void swap_grids(double **prevData, double **nextData, size_t *prevCapacity, size_t *nextCapacity)
{
	double *swap = *prevData;
	*prevData = *nextData;
	*nextData = swap;
	const size_t capacity = *prevCapacity;
	*prevCapacity = *nextCapacity;
	*nextCapacity = capacity;
}

/* Gathers the columns in global order on rank 0, which prints who held how many and the checksum of the bytes. */
static void print_result(MPI_Comm comm, int rank, int totalProcessors, const double *prevData, int xDim, int yDim,
			 int columns, int iterations)
{
	int *counts = NULL, *displs = NULL;
	double *all = NULL;
	const int mine = xDim * yDim;
	if (rank == 0) {
		counts = malloc(sizeof(int) * (size_t)totalProcessors);
		displs = malloc(sizeof(int) * (size_t)totalProcessors);
		all = malloc(sizeof(double) * (size_t)columns * yDim);
	}
	/* Which process holds how many columns: how the bridge shared the data (by node power, with node weights). */
	int worldRank = 0, *worldRanks = NULL;
	MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
	if (rank == 0)
		worldRanks = malloc(sizeof(int) * (size_t)totalProcessors);
	MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
	MPI_Gather(&worldRank, 1, MPI_INT, worldRanks, 1, MPI_INT, 0, comm);
	if (rank == 0)
		for (int p = 0, at = 0; p < totalProcessors; at += counts[p], ++p)
			displs[p] = at;
	MPI_Gatherv(prevData + yDim, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, comm);
	if (rank == 0) {
		printf("final: %d processes, %d iterations\n", totalProcessors, iterations);
		printf("columns:");
		for (int p = 0; p < totalProcessors; ++p)
			printf("%s %d (world rank %d)", p ? "," : "", counts[p] / yDim, worldRanks[p]);
		printf("\n");
		printf("checksum %016llx\n",
		       (unsigned long long)fnv1a((const unsigned char *)all, sizeof(double) * (size_t)columns * yDim));
		fflush(stdout);
	}
	free(all);
	free(worldRanks);
	free(counts);
	free(displs);
}

/* The end of the run: the result printed, the grids freed, every process finalized. The exit code. */
static int end_run(MPI_Comm comm, int rank, int totalProcessors, double *prevData, double *nextData, int xDim,
		   int yDim, const struct options *o)
{
	print_result(comm, rank, totalProcessors, prevData, xDim, yDim, o->columns, o->iterations);
	PCM_Free(prevData);
	PCM_Free(nextData);
	MPI_Barrier(comm);
	return finish(0);
}

int main(int argc, char **argv)
{
	struct options o;
	struct checkpointing ck;
	int rank, totalProcessors, xDim, yDim, current_iteration, iterations;
	double *prevData = NULL, *nextData; /* set by set_up_grid */
	MPI_Comm comm;

	MPI_PCM_Init(&argc, &argv);
	PCM_Init(PCM_COMM_WORLD);
	MPI_Comm_rank(PCM_COMM_WORLD, &rank);
	int stop = parse_arguments(&argc, argv, rank, &o, &ck);
	if (stop < 0)
		stop = set_up_grid(&o, &ck, &comm, &rank, &totalProcessors, &xDim, &yDim, &prevData,
				   &current_iteration);
	if (stop >= 0)
		return stop;
	/* Elements each grid holds (they swap roles; a split leaves them larger than needed). */
	size_t prevCapacity = (size_t)(xDim + 2) * yDim, nextCapacity = prevCapacity;
	nextData = PCM_Alloc(nextCapacity * sizeof(double));
	int first = first_column(xDim, comm);
	int announce = PCM_Process_Status() != PCM_STARTED;
	for (iterations = current_iteration; iterations < o.iterations; iterations++) {
		int changed = 1;
		const struct iteration_clock clock = start_iteration(o.pace);
		if (ck.checkpoint && iterations == ck.checkpoint_at)
			return stop_at_checkpoint(&ck, prevData, nextData, xDim, yDim, o.columns, iterations);
		/* Iterations left (this one too): a late resize may cost more than it saves. */
		PCM_Remaining_iterations(o.iterations - iterations);
		const int pcm_status = PCM_Status(PCM_COMM_WORLD);
		if (pcm_status == PCM_MIGRATE) {
			PCM_Store(rank, "iterator", &iterations, PCM_INT, 1);
			PCM_Store(rank, "datawidth", &xDim, PCM_INT, 1);
			PCM_Store(rank, "myArray", prevData, PCM_DOUBLE, (xDim + 2) * yDim);
			report_failure(PCM_Reconfigure(&PCM_COMM_WORLD, argv[0]), &rank);
		} else if (pcm_status == PCM_RECONFIGURE) {
			report_failure(PCM_Reconfigure(&PCM_COMM_WORLD, argv[0]), &rank);
			MPI_Comm_rank(PCM_COMM_WORLD, &rank);
		} else if (pcm_status == PCM_SPLIT) {
			report_failure(PCM_Split(prevData, PCM_DOUBLE, &iterations, &xDim, &yDim, &rank, &totalProcessors,
						 &PCM_COMM_WORLD, argv[0]),
				       &rank);
		} else if (pcm_status == PCM_MERGE) {
			double *new_buffer = NULL;
			int merge_rank, mergecnts;
			PCM_Merge_datacnts(xDim, yDim, &mergecnts, &merge_rank, PCM_COMM_WORLD);
			if (rank == merge_rank)
				new_buffer = PCM_Alloc((size_t)mergecnts * sizeof(double));
			report_failure(PCM_Merge(prevData, PCM_DOUBLE, &xDim, &yDim, new_buffer, mergecnts, &rank,
						 &totalProcessors, &PCM_COMM_WORLD),
				       &rank);
			if (rank == merge_rank) {
				PCM_Free(prevData);
				prevData = new_buffer;
				prevCapacity = (size_t)mergecnts;
			}
		} else {
			/* PCM_NONE, or PCM_FAILED: a failed reconfiguration leaves the configuration and the data as they
			 * were, so there is nothing to rebuild (the bridge printed why it failed). */
			changed = 0;
		}
		comm = after_probe(&o, changed, xDim, yDim, &rank, &totalProcessors, &nextData, &nextCapacity, &first);
		if (comm == MPI_COMM_NULL)
			return stop_world_mismatch();
		print_iteration(&o, rank, iterations, totalProcessors, changed, &announce);

		exchange_ghosts(prevData, xDim, yDim, rank, totalProcessors, comm);
		step(prevData, nextData, xDim, yDim, first, o.columns);
		swap_grids(&prevData, &nextData, &prevCapacity, &nextCapacity);
		end_iteration(&o, &clock, iterations, rank, totalProcessors);
	}

	return end_run(comm, rank, totalProcessors, prevData, nextData, xDim, yDim, &o);
}
