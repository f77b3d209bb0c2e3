// SPDX-License-Identifier: Apache-2.0
// A plain MPI program, nothing of malleo in it: the README's program to profile (`malleo run -n 4 --
// build/examples/ring/ring_openmpi`) and the docs' stand-in (`./ring 100`, `./my_mpi_app`, `./app`). A token goes
// round the ranks N times (default 10), each rank adding one, and rank 0 checks that it came back as N × size.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, size = 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const long rounds = argc > 1 ? atol(argv[1]) : 10;
	long token = 0;
	for (long round = 0; round < rounds; ++round) {
		if (size == 1) {
			++token;
			continue;
		}
		if (rank == 0) {
			++token;
			MPI_Send(&token, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(&token, 1, MPI_LONG, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&token, 1, MPI_LONG, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			++token;
			MPI_Send(&token, 1, MPI_LONG, (rank + 1) % size, 0, MPI_COMM_WORLD);
		}
	}
	int status = 0;
	if (rank == 0) {
		status = token != rounds * size;
		printf("ring: %ld rounds over %d ranks, token %ld%s\n", rounds, size, token, status ? " (wrong)" : "");
	}
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return status;
}
