/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MPI_Comm_spawn: the parent job spawns one child; parent rank 0 sends it one int over the
 * intercommunicator. The child is outside the parent's MPI_COMM_WORLD (its message counts as
 * `outside_world`) and, being a job of its own, writes its own report (check_spawn.py).
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	MPI_Comm parent, child;
	int value = 42, rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_get_parent(&parent);
	if (parent == MPI_COMM_NULL) {
		MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child,
			       MPI_ERRCODES_IGNORE);
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		if (rank == 0)
			MPI_Send(&value, 1, MPI_INT, 0, 0, child);
		MPI_Comm_disconnect(&child);
	} else {
		MPI_Recv(&value, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
		printf("spawn: child got %d\n", value);
		MPI_Comm_disconnect(&parent);
	}
	MPI_Finalize();
	return 0;
}
