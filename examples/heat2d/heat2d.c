/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 2D heat diffusion, the papers' malleable MPI case (seed 001, Figs. 6-7): the grid's columns are spread in
 * blocks over the processes, each iteration exchanges one ghost column with each neighbour and takes a Jacobi
 * step. Written against the PCM API, so it splits, merges and migrates when told to (MALLEO_FORCE or the agent).
 *
 *   heat2d [--rows R] [--columns C] [--iterations N] [--progress K]
 *
 * At the end rank 0 gathers the grid in global column order and prints a 64-bit FNV-1a checksum of its bytes:
 * every point's update reads the same operands in the same order whatever the partition, so a run reconfigured
 * any number of times prints the checksum of a static run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pcm_api.h"

struct options {
	int rows;
	int columns;
	int iterations;
	int progress;
};

static int parse_positive(const char *flag, const char *text, int *out)
{
	char *end = NULL;
	long value = strtol(text, &end, 10);
	if (!*text || *end || value < 1 || value > 100000000) {
		fprintf(stderr, "heat2d: %s %s: expected a positive integer\n", flag, text);
		return -1;
	}
	*out = (int)value;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	o->rows = 64;
	o->columns = 64;
	o->iterations = 100;
	o->progress = 0;
	for (int i = 1; i < argc; ++i) {
		int *target = NULL;
		if (!strcmp(argv[i], "--rows"))
			target = &o->rows;
		else if (!strcmp(argv[i], "--columns"))
			target = &o->columns;
		else if (!strcmp(argv[i], "--iterations"))
			target = &o->iterations;
		else if (!strcmp(argv[i], "--progress"))
			target = &o->progress;
		else {
			fprintf(stderr, "heat2d: unknown option %s (--rows, --columns, --iterations, --progress)\n",
				argv[i]);
			return -1;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "heat2d: %s needs a value\n", argv[i]);
			return -1;
		}
		if (parse_positive(argv[i], argv[i + 1], target))
			return -1;
		++i;
	}
	if (o->rows < 3 || o->columns < 3) {
		fprintf(stderr, "heat2d: the grid needs at least 3 rows and 3 columns\n");
		return -1;
	}
	return 0;
}

/* The initial temperature of a point: a hot left wall, the rest a fixed pattern so every column differs. */
static double initial(int column, int row)
{
	if (column == 0)
		return 100.0;
	return (double)((column * 31 + row * 17) % 97) / 8.0;
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

static uint64_t fnv1a(const unsigned char *bytes, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; ++i) {
		h ^= bytes[i];
		h *= 1099511628211ULL;
	}
	return h;
}

int main(int argc, char **argv)
{
	struct options o;
	int rank, totalProcessors, xDim, yDim, current_iteration, iterations;
	double *prevData, *nextData;
	int merge_rank, mergecnts;

	MPI_PCM_Init(&argc, &argv);
	PCM_Init(PCM_COMM_WORLD);
	MPI_Comm_rank(PCM_COMM_WORLD, &rank);
	MPI_Comm_size(PCM_COMM_WORLD, &totalProcessors);
	if (parse_options(argc, argv, &o)) {
		/* Every process parses the same arguments, so all stop here together. */
		PCM_Finalize(PCM_COMM_WORLD);
		MPI_Finalize();
		return 2;
	}
	yDim = o.rows;

	if (PCM_Process_Status() == PCM_STARTED) {
		int world = 0;
		MPI_Comm_size(MPI_COMM_WORLD, &world);
		if (o.columns < world) {
			if (rank == 0)
				fprintf(stderr, "heat2d: %d columns cannot feed up to %d processes\n", o.columns,
					world);
			PCM_Finalize(PCM_COMM_WORLD);
			MPI_Finalize();
			return 2;
		}
		current_iteration = 0;
		xDim = o.columns / totalProcessors + (rank < o.columns % totalProcessors);
		prevData = calloc((size_t)(xDim + 2) * yDim, sizeof(double));
		const int first = first_column(xDim, PCM_COMM_WORLD);
		for (int i = 1; i <= xDim; ++i)
			for (int r = 0; r < yDim; ++r)
				prevData[(size_t)i * yDim + r] = initial(first + i - 1, r);
	} else {
		PCM_Comm_rank(PCM_COMM_WORLD, &rank);
		PCM_Load(rank, "iterator", &current_iteration);
		PCM_Load(rank, "datawidth", &xDim);
		prevData = calloc((size_t)(xDim + 2) * yDim, sizeof(double));
		PCM_Load(rank, "myArray", prevData);
	}
	nextData = calloc((size_t)(xDim + 2) * yDim, sizeof(double));
	int first = first_column(xDim, PCM_COMM_WORLD);

	for (iterations = current_iteration; iterations < o.iterations; iterations++) {
		int changed = 1;
		const int pcm_status = PCM_Status(PCM_COMM_WORLD);
		if (pcm_status == PCM_MIGRATE) {
			PCM_Store(rank, "iterator", &iterations, PCM_INT, 1);
			PCM_Store(rank, "datawidth", &xDim, PCM_INT, 1);
			PCM_Store(rank, "myArray", prevData, PCM_DOUBLE, (xDim + 2) * yDim);
			if (PCM_Reconfigure(&PCM_COMM_WORLD, argv[0]) != PCM_SUCCESS && rank == 0)
				fprintf(stderr, "heat2d: %s\n", PCM_Error_string());
		} else if (pcm_status == PCM_RECONFIGURE) {
			if (PCM_Reconfigure(&PCM_COMM_WORLD, argv[0]) != PCM_SUCCESS && rank == 0)
				fprintf(stderr, "heat2d: %s\n", PCM_Error_string());
			MPI_Comm_rank(PCM_COMM_WORLD, &rank);
		} else if (pcm_status == PCM_SPLIT) {
			if (PCM_Split(prevData, PCM_DOUBLE, &iterations, &xDim, &yDim, &rank, &totalProcessors,
				      &PCM_COMM_WORLD, argv[0]) != PCM_SUCCESS && rank == 0)
				fprintf(stderr, "heat2d: %s\n", PCM_Error_string());
		} else if (pcm_status == PCM_MERGE) {
			double *new_buffer = NULL;
			PCM_Merge_datacnts(xDim, yDim, &mergecnts, &merge_rank, PCM_COMM_WORLD);
			if (rank == merge_rank)
				new_buffer = calloc((size_t)mergecnts, sizeof(double));
			if (PCM_Merge(prevData, PCM_DOUBLE, &xDim, &yDim, new_buffer, mergecnts, &rank,
				      &totalProcessors, &PCM_COMM_WORLD) != PCM_SUCCESS && rank == 0)
				fprintf(stderr, "heat2d: %s\n", PCM_Error_string());
			if (rank == merge_rank) {
				free(prevData);
				prevData = new_buffer;
			}
		} else {
			changed = pcm_status == PCM_FAILED;
		}
		if (changed) {
			MPI_Comm_rank(PCM_COMM_WORLD, &rank);
			MPI_Comm_size(PCM_COMM_WORLD, &totalProcessors);
			free(nextData);
			nextData = calloc((size_t)(xDim + 2) * yDim, sizeof(double));
			first = first_column(xDim, PCM_COMM_WORLD);
			if (rank == 0)
				printf("iteration %d: %d processes\n", iterations, totalProcessors);
		}
		if (o.progress && rank == 0 && iterations % o.progress == 0)
			printf("iteration %d of %d on %d processes\n", iterations, o.iterations, totalProcessors);

		exchange_ghosts(prevData, xDim, yDim, rank, totalProcessors, PCM_COMM_WORLD);
		step(prevData, nextData, xDim, yDim, first, o.columns);
		double *swap = prevData;
		prevData = nextData;
		nextData = swap;
	}

	/* Gather the columns in global order on rank 0 and print the checksum of the bytes. */
	int *counts = NULL, *displs = NULL;
	double *all = NULL;
	const int mine = xDim * yDim;
	if (rank == 0) {
		counts = malloc(sizeof(int) * (size_t)totalProcessors);
		displs = malloc(sizeof(int) * (size_t)totalProcessors);
		all = malloc(sizeof(double) * (size_t)o.columns * yDim);
	}
	MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, PCM_COMM_WORLD);
	if (rank == 0)
		for (int p = 0, at = 0; p < totalProcessors; at += counts[p], ++p)
			displs[p] = at;
	MPI_Gatherv(prevData + yDim, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, PCM_COMM_WORLD);
	if (rank == 0) {
		printf("final: %d processes, %d iterations\n", totalProcessors, o.iterations);
		printf("checksum %016llx\n",
		       (unsigned long long)fnv1a((const unsigned char *)all, sizeof(double) * (size_t)o.columns * yDim));
		fflush(stdout);
	}
	free(all);
	free(counts);
	free(displs);
	free(prevData);
	free(nextData);
	MPI_Barrier(PCM_COMM_WORLD);
	PCM_Finalize(PCM_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
