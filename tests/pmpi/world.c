// SPDX-License-Identifier: Apache-2.0
// MPI_COMM_WORLD substitution. World rank 0 stays out (as a parked process would); the others form
// `sub` in reverse order (sub rank i = world rank size-1-i) and publish it with MALLEO_Set_world. Code
// written against MPI_COMM_WORLD must then see `sub`: its size and ranks, a ring of ROUNDS messages of
// BYTES bytes to the next sub rank, an Allreduce over the active ranks only, a dup of the same size,
// MPI_Comm_compare saying MPI_IDENT. After MALLEO_Set_world(MPI_COMM_NULL) the world is whole again.
// Every rank prints "world ok" or a FAIL line and exits 1. check_world.py checks the report's matrix.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "malleo_pmpi.h"

#define ROUNDS 5
#define BYTES 1000

static int failures;

static void expect(int ok, int rank, const char *what)
{
	if (!ok) {
		printf("FAIL world rank %d: %s\n", rank, what);
		++failures;
	}
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (!MALLEO_Set_world) {
		printf("FAIL world rank %d: MALLEO_Set_world is missing (run with libmalleo_pmpi preloaded)\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	MPI_Comm sub;
	MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 0, size - rank, &sub);
	if (rank != 0) {
		expect(MALLEO_Set_world(sub) == MPI_SUCCESS, rank, "MALLEO_Set_world refused sub");
		int r, n, cmp, sum = 0, dupSize = 0;
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
		MPI_Comm_size(MPI_COMM_WORLD, &n);
		expect(n == size - 1, rank, "MPI_Comm_size(MPI_COMM_WORLD) is not the substituted size");
		expect(r == size - 1 - rank, rank, "MPI_Comm_rank(MPI_COMM_WORLD) is not the substituted rank");
		MPI_Comm_compare(MPI_COMM_WORLD, sub, &cmp);
		expect(cmp == MPI_IDENT, rank, "MPI_Comm_compare(MPI_COMM_WORLD, sub) is not MPI_IDENT");

		char out[BYTES], in[BYTES];
		memset(out, r, sizeof(out));
		for (int i = 0; i < ROUNDS; ++i) {
			MPI_Request req;
			MPI_Irecv(in, BYTES, MPI_CHAR, (r + n - 1) % n, 7, MPI_COMM_WORLD, &req);
			MPI_Send(out, BYTES, MPI_CHAR, (r + 1) % n, 7, MPI_COMM_WORLD);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
			expect(in[0] == (char)((r + n - 1) % n), rank, "ring message from the wrong rank");
		}
		MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		expect(sum == size * (size - 1) / 2, rank, "MPI_Allreduce over MPI_COMM_WORLD reached the left-out rank");

		MPI_Comm dup;
		MPI_Comm_dup(MPI_COMM_WORLD, &dup);
		MPI_Comm_size(dup, &dupSize);
		expect(dupSize == size - 1, rank, "MPI_Comm_dup(MPI_COMM_WORLD) has the wrong size");
		MPI_Comm_free(&dup);
		MALLEO_Set_world(MPI_COMM_NULL);
		MPI_Comm_free(&sub);
	}
	int n;
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	expect(n == size, rank, "MPI_COMM_WORLD is not whole after MALLEO_Set_world(MPI_COMM_NULL)");
	int total = 0;
	MPI_Allreduce(&rank, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	expect(total == size * (size - 1) / 2, rank, "the final Allreduce is wrong");
	if (!failures)
		printf("world ok %d\n", rank);
	MPI_Finalize();
	return failures ? 1 : 0;
}
