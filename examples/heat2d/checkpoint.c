/* SPDX-License-Identifier: Apache-2.0 */
/* heat2d's stop-restart baseline (checkpoint.h): the grid through rank 0 into a file, and back. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pcm_api.h"

#include "checkpoint.h"

static const char checkpoint_magic[8] = {'H', 'E', 'A', 'T', '2', 'D', 'C', '1'};

/* Gathers the grid on rank 0, which writes the checkpoint; then every process stops. Returns the exit code. */
int stop_at_checkpoint(const struct checkpointing *c, double *prevData, double *nextData, int xDim, int yDim,
		       int columns, int iteration)
{
	int rank = 0, size = 0, failed = 0;
	MPI_Comm_rank(PCM_COMM_WORLD, &rank);
	MPI_Comm_size(PCM_COMM_WORLD, &size);
	const double start = MPI_Wtime();
	const int mine = xDim * yDim;
	int *counts = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
	int *displs = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
	double *all = rank == 0 ? malloc(sizeof(double) * (size_t)columns * yDim) : NULL;
	MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, PCM_COMM_WORLD);
	if (rank == 0)
		for (int p = 0, at = 0; p < size; at += counts[p], ++p)
			displs[p] = at;
	MPI_Gatherv(prevData + yDim, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, PCM_COMM_WORLD);
	if (rank == 0) {
		const int64_t header[3] = {yDim, columns, iteration};
		const size_t doubles = (size_t)columns * yDim;
		FILE *file = fopen(c->checkpoint, "wb");
		failed = !file || fwrite(checkpoint_magic, 1, 8, file) != 8 || fwrite(header, 8, 3, file) != 3 ||
			 fwrite(all, sizeof(double), doubles, file) != doubles;
		if (file && fclose(file))
			failed = 1;
		if (failed)
			fprintf(stderr, "heat2d: could not write the checkpoint %s\n", c->checkpoint);
		else
			printf("checkpoint: iteration %d, %zu bytes from %d processes written to %s in %.6f s\n",
			       iteration, 32 + doubles * sizeof(double), size, c->checkpoint, MPI_Wtime() - start);
		fflush(stdout);
	}
	free(all);
	free(counts);
	free(displs);
	PCM_Free(prevData);
	PCM_Free(nextData);
	MPI_Bcast(&failed, 1, MPI_INT, 0, PCM_COMM_WORLD);
	PCM_Finalize(PCM_COMM_WORLD);
	MPI_Finalize();
	return failed ? 1 : 0;
}

/* Rank 0 reads the checkpoint and scatters its columns over the processes' blocks (prevData, xDim columns each).
 * Returns the iteration to continue from, or -1 on every process if the file is unusable (rank 0 says why). */
int restart_from_checkpoint(const struct checkpointing *c, double *prevData, int xDim, int yDim, int columns)
{
	int rank = 0, size = 0;
	MPI_Comm_rank(PCM_COMM_WORLD, &rank);
	MPI_Comm_size(PCM_COMM_WORLD, &size);
	const double start = MPI_Wtime();
	const size_t doubles = (size_t)columns * yDim;
	int iteration = -1;
	double *all = NULL;
	if (rank == 0) {
		char magic[8];
		int64_t header[3] = {0, 0, -1};
		FILE *file = fopen(c->restart, "rb");
		if (!file || fread(magic, 1, 8, file) != 8 || memcmp(magic, checkpoint_magic, 8) ||
		    fread(header, 8, 3, file) != 3)
			fprintf(stderr, "heat2d: %s is not a heat2d checkpoint\n", c->restart);
		else if (header[0] != yDim || header[1] != columns || header[2] < 0 || header[2] > INT32_MAX)
			fprintf(stderr, "heat2d: %s holds a %lld x %lld grid at iteration %lld, not a %d x %d one\n",
				c->restart, (long long)header[0], (long long)header[1], (long long)header[2], yDim,
				columns);
		else if (!(all = malloc(sizeof(double) * doubles)) || fread(all, sizeof(double), doubles, file) != doubles)
			fprintf(stderr, "heat2d: %s is truncated\n", c->restart);
		else
			iteration = (int)header[2];
		if (file)
			fclose(file);
	}
	MPI_Bcast(&iteration, 1, MPI_INT, 0, PCM_COMM_WORLD);
	if (iteration >= 0) {
		const int mine = xDim * yDim;
		int *counts = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
		int *displs = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
		MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, PCM_COMM_WORLD);
		if (rank == 0)
			for (int p = 0, at = 0; p < size; at += counts[p], ++p)
				displs[p] = at;
		MPI_Scatterv(all, counts, displs, MPI_DOUBLE, prevData + yDim, mine, MPI_DOUBLE, 0, PCM_COMM_WORLD);
		if (rank == 0)
			printf("restart: iteration %d, %zu bytes read from %s and scattered to %d processes in %.6f s\n",
			       iteration, 32 + doubles * sizeof(double), c->restart, size, MPI_Wtime() - start);
		free(counts);
		free(displs);
	}
	free(all);
	return iteration;
}
