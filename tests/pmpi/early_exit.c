/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ends without MPI_Finalize, as real programs sometimes do: `exit` returns from main on every rank
 * after one send around a ring, `abort` has rank 0 call MPI_Abort after it. Each rank that gets the
 * chance must leave its own partial report (check_modes.py).
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rank, size, value = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &value, 1, MPI_INT,
		     (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	if (argc > 1 && !strcmp(argv[1], "abort") && rank == 0)
		MPI_Abort(MPI_COMM_WORLD, 3);
	if (argc > 1 && !strcmp(argv[1], "abort"))
		MPI_Barrier(MPI_COMM_WORLD); /* never completes: rank 0 aborts the job */
	return 0;
}
