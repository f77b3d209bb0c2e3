/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MPI_THREAD_MULTIPLE: kThreads threads per rank, each on its own duplicate of MPI_COMM_WORLD, send
 * `rounds` messages of (thread + 1) * 8 bytes to every other rank while the others do the same.
 * Counters are per thread, so the report must still hold the exact totals: check_threads.py.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { kThreads = 3 };

static int gRounds, gRank, gSize;
static MPI_Comm gComms[kThreads];

static void *exchange(void *arg)
{
	const int t = (int)(long)arg;
	char out[64] = {0}, in[64];
	for (int k = 0; k < gRounds; ++k)
		for (int p = 0; p < gSize; ++p) {
			if (p == gRank)
				continue;
			MPI_Request request;
			MPI_Irecv(in, sizeof(in), MPI_CHAR, p, t, gComms[t], &request);
			MPI_Send(out, (t + 1) * 8, MPI_CHAR, p, t, gComms[t]);
			MPI_Wait(&request, MPI_STATUS_IGNORE);
		}
	return NULL;
}

int main(int argc, char **argv)
{
	int provided;
	gRounds = argc > 1 ? atoi(argv[1]) : 50;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	if (provided < MPI_THREAD_MULTIPLE) {
		fprintf(stderr, "threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
		MPI_Finalize();
		return 77;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &gRank);
	MPI_Comm_size(MPI_COMM_WORLD, &gSize);
	for (int t = 0; t < kThreads; ++t)
		MPI_Comm_dup(MPI_COMM_WORLD, &gComms[t]);
	pthread_t threads[kThreads];
	for (int t = 0; t < kThreads; ++t)
		pthread_create(&threads[t], NULL, exchange, (void *)(long)t);
	for (int t = 0; t < kThreads; ++t)
		pthread_join(threads[t], NULL);
	for (int t = 0; t < kThreads; ++t)
		MPI_Comm_free(&gComms[t]);
	if (gRank == 0)
		printf("threads: %d ranks x %d threads, %d rounds done\n", gSize, kThreads,
		       gRounds);
	MPI_Finalize();
	return 0;
}
