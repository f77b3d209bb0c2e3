/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Iterations of a known length and traffic for the agent reporter test (check_agent.py): each
 * iteration sleeps SECONDS, then every rank sends BYTES to the next rank of a ring with
 * MPI_Sendrecv, and the iteration ends with MPI_Barrier and MALLEO_Iteration_mark. The send comes
 * last so that a report (taken at any moment) rarely sees the bytes of an iteration that has not
 * ended yet.
 *
 *   iterations [COUNT [SECONDS [BYTES]]]   (defaults 15, 0.2, 1000)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "malleo_pmpi.h"

enum { kMaxBytes = 1 << 16 };

static char out[kMaxBytes], in[kMaxBytes];

int main(int argc, char **argv)
{
	const int count = argc > 1 ? atoi(argv[1]) : 15;
	const double seconds = argc > 2 ? atof(argv[2]) : 0.2;
	int bytes = argc > 3 ? atoi(argv[3]) : 1000;
	if (bytes > kMaxBytes)
		bytes = kMaxBytes;
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const struct timespec pause = {(time_t)seconds,
				       (long)((seconds - (double)(time_t)seconds) * 1e9)};
	for (int i = 0; i < count; ++i) {
		nanosleep(&pause, NULL);
		MPI_Sendrecv(out, bytes, MPI_CHAR, (rank + 1) % size, 7, in, bytes, MPI_CHAR,
			     (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Barrier(MPI_COMM_WORLD);
		if (MALLEO_Iteration_mark)
			MALLEO_Iteration_mark();
	}
	if (rank == 0)
		printf("%d iterations done\n", count);
	MPI_Finalize();
	return 0;
}
