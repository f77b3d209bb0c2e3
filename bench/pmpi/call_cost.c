/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-call cost of MPI as seen by the application, for run_call_cost.py to compare with and without
 * libmalleo_pmpi preloaded:
 *   test      MPI_Test on MPI_REQUEST_NULL in a tight loop (a call MPI answers at once, so a
 * wrapper's cost shows); libmalleo_pmpi times only one polling call in 16, so this is the cost of a
 * counted call; timed     MPI_Send of 0 bytes to MPI_PROC_NULL: just as cheap, but a call that may
 * block is timed every time, so this is the cost of a counted and timed call (two TSC reads);
 *   pingpong  an 8-byte ping-pong between ranks 0 and 1, reported per one-way message (two calls:
 * send + recv). Each figure is the median of `batches` batches. Rank 0 prints one line: `test_ns=X
 * timed_ns=Y pingpong_ns=Z`.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double nowNs(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compareDoubles(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *values, int n)
{
	qsort(values, (size_t)n, sizeof(double), compareDoubles);
	return values[n / 2];
}

int main(int argc, char **argv)
{
	const long calls = argc > 1 ? atol(argv[1]) : 1000000;
	const long trips = argc > 2 ? atol(argv[2]) : 20000;
	const int batches = argc > 3 ? atoi(argv[3]) : 9;
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	double *perCall = malloc(sizeof(double) * (size_t)batches);
	double *perTimedCall = malloc(sizeof(double) * (size_t)batches);
	double *perMessage = malloc(sizeof(double) * (size_t)batches);
	for (int b = 0; b < batches; ++b) {
		MPI_Request request = MPI_REQUEST_NULL;
		int flag;
		const double t0 = nowNs();
		for (long i = 0; i < calls; ++i)
			MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
		perCall[b] = (nowNs() - t0) / (double)calls;
	}
	for (int b = 0; b < batches; ++b) {
		char nothing = 0;
		const double t0 = nowNs();
		for (long i = 0; i < calls; ++i)
			MPI_Send(&nothing, 0, MPI_CHAR, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
		perTimedCall[b] = (nowNs() - t0) / (double)calls;
	}
	char message[8] = {0};
	for (int b = 0; b < batches && size > 1; ++b) {
		MPI_Barrier(MPI_COMM_WORLD);
		const double t0 = nowNs();
		for (long i = 0; i < trips && rank < 2; ++i) {
			if (rank == 0) {
				MPI_Send(message, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(message, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(message, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				MPI_Send(message, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
			}
		}
		perMessage[b] = (nowNs() - t0) / (2.0 * (double)trips);
	}
	if (rank == 0)
		printf("test_ns=%.3f timed_ns=%.3f pingpong_ns=%.3f\n", median(perCall, batches),
		       median(perTimedCall, batches), size > 1 ? median(perMessage, batches) : 0.0);
	free(perCall);
	free(perTimedCall);
	free(perMessage);
	MPI_Finalize();
	return 0;
}
