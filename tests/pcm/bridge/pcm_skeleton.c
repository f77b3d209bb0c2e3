/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The papers' PCM skeleton (seed 001, Figs. 6-7) as close to the text as C allows, completed into a program: a
 * 1D stencil over columns. Name fixes the paper's typos need, and nothing else: PCM_MPI_Init as printed,
 * `PCM_Status_t` for the status variable's type (the paper names both a type and a function PCM_Status),
 * PCM_Reconfigure always given &PCM_COMM_WORLD, PCM_Status called where Fig. 7's extraction lost the call.
 * The skeleton declares its own PCM_COMM_WORLD as Fig. 6 does; it is the header's variable. It frees its buffers,
 * which the figures leave out (the sanitizer build reports each as a leak).
 * Prints "sum <hex>" of the final data so a checker compares reconfigured runs with a static one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "pcm_api.h"

#define TOTALITERATIONS 24

MPI_Comm PCM_COMM_WORLD;

int main(int argc, char **argv)
{
	int rank, totalProcessors, xDim, yDim = 6;
	int current_iteration, process_status, iterations;
	PCM_Status_t pcm_status;
	double *prevData;

	/* declarations for malleability */
	double *new_buffer = NULL;
	int merge_rank, mergecnts;

	PCM_MPI_Init(&argc, &argv);
	PCM_COMM_WORLD = MPI_COMM_WORLD;
	PCM_Init(PCM_COMM_WORLD);
	MPI_Comm_rank(PCM_COMM_WORLD, &rank);
	MPI_Comm_size(PCM_COMM_WORLD, &totalProcessors);
	process_status = PCM_Process_Status();

	const int columns = 20;
	if (process_status == PCM_STARTED) {
		current_iteration = 0;
		xDim = columns / totalProcessors + (rank < columns % totalProcessors);
		prevData = (double *)calloc((size_t)(xDim + 2) * yDim, sizeof(double));
		int first = 0;
		MPI_Exscan(&xDim, &first, 1, MPI_INT, MPI_SUM, PCM_COMM_WORLD);
		if (rank == 0)
			first = 0;
		for (int i = 1; i <= xDim; ++i)
			for (int r = 0; r < yDim; ++r)
				prevData[i * yDim + r] = (first + i - 1) * 10 + r;
	} else {
		PCM_Comm_rank(PCM_COMM_WORLD, &rank);
		PCM_Load(rank, "iterator", &current_iteration);
		PCM_Load(rank, "datawidth", &xDim);
		prevData = (double *)calloc((size_t)(xDim + 2) * yDim, sizeof(double));
		PCM_Load(rank, "myArray", prevData);
	}

	for (iterations = current_iteration; iterations < TOTALITERATIONS; iterations++) {
		pcm_status = PCM_Status(PCM_COMM_WORLD);
		if (pcm_status == PCM_MIGRATE) {
			PCM_Store(rank, "iterator", &iterations, PCM_INT, 1);
			PCM_Store(rank, "datawidth", &xDim, PCM_INT, 1);
			PCM_Store(rank, "myArray", prevData, PCM_DOUBLE, (xDim + 2) * yDim);
			PCM_Reconfigure(&PCM_COMM_WORLD, argv[0]);
		} else if (pcm_status == PCM_RECONFIGURE) {
			PCM_Reconfigure(&PCM_COMM_WORLD, argv[0]);
			MPI_Comm_rank(PCM_COMM_WORLD, &rank);
		} else if (pcm_status == PCM_SPLIT) {
			PCM_Split(prevData, PCM_DOUBLE, &iterations, &xDim, &yDim, &rank, &totalProcessors,
				  &PCM_COMM_WORLD, argv[0]);
		} else if (pcm_status == PCM_MERGE) {
			PCM_Merge_datacnts(xDim, yDim, &mergecnts, &merge_rank, PCM_COMM_WORLD);
			if (rank == merge_rank)
				/* Reallocate memory for the data buffer */
				new_buffer = (double *)calloc((size_t)mergecnts, sizeof(double));
			PCM_Merge(prevData, PCM_DOUBLE, &xDim, &yDim, new_buffer, mergecnts, &rank, &totalProcessors,
				  &PCM_COMM_WORLD);
			if (rank == merge_rank) {
				free(prevData); /* not in Fig. 7: the merged data replaces it */
				prevData = new_buffer;
			}
		}
		MPI_Comm_size(PCM_COMM_WORLD, &totalProcessors);
		MPI_Comm_rank(PCM_COMM_WORLD, &rank);
		// Data Computation: every value grows by its row index, so the result does not depend on neighbours.
		for (int i = 1; i <= xDim; ++i)
			for (int r = 0; r < yDim; ++r)
				prevData[i * yDim + r] += r * 0.5 + 1.0;
		// Exchange of computed data with neighboring processes.
		const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
		const int right = rank < totalProcessors - 1 ? rank + 1 : MPI_PROC_NULL;
		MPI_Sendrecv(prevData + yDim, yDim, MPI_DOUBLE, left, 0, prevData + (xDim + 1) * yDim, yDim,
			     MPI_DOUBLE, right, 0, PCM_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	// Data Collection
	double local = 0.0, sum = 0.0;
	int first = 0;
	MPI_Exscan(&xDim, &first, 1, MPI_INT, MPI_SUM, PCM_COMM_WORLD);
	if (rank == 0)
		first = 0;
	for (int i = 1; i <= xDim; ++i)
		for (int r = 0; r < yDim; ++r)
			local += prevData[i * yDim + r] * (first + i);
	MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, PCM_COMM_WORLD);
	if (rank == 0) {
		uint64_t bits;
		memcpy(&bits, &sum, sizeof bits);
		printf("sum %016llx on %d processes\n", (unsigned long long)bits, totalProcessors);
	}
	MPI_Barrier(PCM_COMM_WORLD);
	free(prevData); /* not in the papers' figures either */
	PCM_Finalize(PCM_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
