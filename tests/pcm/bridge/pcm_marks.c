/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A PCM C API loop that marks its own iterations (check_probe_iterations.py): every EVERY-th
 * iteration it calls MALLEO_Iteration_mark, so with the profiler preloaded its report must count
 * ITERATIONS / EVERY iterations, the program's marks, and none of the bridge's probes, which come
 * once an iteration.
 *
 *   pcm_marks ITERATIONS EVERY
 */
#include <stdio.h>
#include <stdlib.h>

#include "malleo_pmpi.h"
#include "pcm_api.h"

int main(int argc, char **argv)
{
	MPI_PCM_Init(&argc, &argv);
	PCM_Init(PCM_COMM_WORLD);
	const int iterations = argc > 1 ? atoi(argv[1]) : 0, every = argc > 2 ? atoi(argv[2]) : 0;
	if (iterations < 1 || every < 1) {
		fprintf(stderr, "usage: pcm_marks ITERATIONS EVERY (both at least 1)\n");
		PCM_Finalize(PCM_COMM_WORLD);
		MPI_Finalize();
		return 2;
	}
	for (int i = 0; i < iterations; ++i) {
		if (PCM_Status(PCM_COMM_WORLD) != PCM_NONE)
			fprintf(stderr,
				"pcm_marks: a reconfiguration nobody asked for at iteration %d\n",
				i);
		int one = 1, sum = 0;
		MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, PCM_COMM_WORLD);
		if ((i + 1) % every == 0 && MALLEO_Iteration_mark)
			MALLEO_Iteration_mark();
	}
	int rank = 0;
	MPI_Comm_rank(PCM_COMM_WORLD, &rank);
	if (rank == 0)
		printf("%d iterations, marked every %d\n", iterations, every);
	PCM_Finalize(PCM_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
