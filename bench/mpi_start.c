// SPDX-License-Identifier: Apache-2.0
// What starting MPI processes costs: MPI_Init of the launched processes (wall and CPU time) and MPI_Comm_spawn of
// children from rank 0, which is what a spawn-mode split waits for (docs/notes/open-mpi-pml.md).
//
//	mpirun -n 1 build/bench/mpi_start [SPAWNS [CHILDREN]]
//
// Prints one line for rank 0's own MPI_Init, then one per spawn of CHILDREN (default 2) processes, SPAWNS (default
// 5) times: the spawn's wall time at the parent, and the first child's MPI_Init wall and CPU time. The children
// stay until the last spawn is done. bench/mpi_start.sh runs it under different Open MPI settings, interleaved.
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpuSeconds(void)
{
	struct rusage usage;
	getrusage(RUSAGE_SELF, &usage);
	return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
	       (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char **argv)
{
	const double start = now();
	int provided = 0;
	// As the PCM bridge in spawn mode, which spawns from a helper thread.
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	const double init[2] = {now() - start, cpuSeconds()};
	MPI_Comm parent = MPI_COMM_NULL;
	MPI_Comm_get_parent(&parent);
	int rank = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (parent != MPI_COMM_NULL) {
		if (rank == 0)
			MPI_Send(init, 2, MPI_DOUBLE, 0, 1, parent);
		// Alive until the parent is done spawning, as a spawn-mode split's processes are: Open MPI 4.1.4 hung
		// or timed out now and then (LOOKUP in pmix_server_pub.c) in a spawn while earlier children finalized.
		MPI_Barrier(parent);
		MPI_Comm_disconnect(&parent);
		MPI_Finalize();
		return 0;
	}
	const int spawns = argc > 1 ? atoi(argv[1]) : 5;
	const int children = argc > 2 ? atoi(argv[2]) : 2;
	if (rank == 0)
		printf("init %.4f s cpu %.4f s\n", init[0], init[1]);
	MPI_Comm *inter = calloc((size_t)(spawns > 0 ? spawns : 1), sizeof *inter);
	for (int i = 0; i < spawns; ++i) {
		const double before = now();
		MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, children, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter[i],
			       MPI_ERRCODES_IGNORE);
		const double spawned = now() - before;
		double child[2] = {0, 0};
		if (rank == 0) {
			MPI_Recv(child, 2, MPI_DOUBLE, 0, 1, inter[i], MPI_STATUS_IGNORE);
			printf("spawn %.4f s child init %.4f s cpu %.4f s\n", spawned, child[0], child[1]);
			fflush(stdout);
		}
	}
	for (int i = 0; i < spawns; ++i) {
		MPI_Barrier(inter[i]);
		MPI_Comm_disconnect(&inter[i]);
	}
	free(inter);
	MPI_Finalize();
	return 0;
}
