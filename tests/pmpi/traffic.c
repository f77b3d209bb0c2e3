/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Known traffic for the PMPI profiler tests: check_traffic.py computes the exact counts and bytes
 * this program produces from (world size, rounds) and compares them with the report. Keep the two
 * in step.
 *
 * Message i -> j in round k carries elements(i, j, k) = 1 + 7i + 3j + k elements (kept small so
 * that even the blocking sends complete eagerly and the phases cannot deadlock).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "malleo_pmpi.h"

enum { kMaxElements = 256 };

static int elements(int from, int to, int round)
{
	return 1 + 7 * from + 3 * to + round;
}

static void check(int rc, const char *what)
{
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "traffic: %s failed\n", what);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
}

int main(int argc, char **argv)
{
	const int rounds = argc > 1 ? atoi(argv[1]) : 3;
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	int ints[kMaxElements] = {0}, intsIn[kMaxElements];
	double doubles[kMaxElements] = {0}, doublesIn[kMaxElements];
	char chars[kMaxElements] = {0}, charsIn[kMaxElements];
	MPI_Status statuses[16]; /* not MPI_STATUSES_IGNORE: gcc 12 warns on it with MPICH
				    (-Wstringop-overflow) */

	/* A: MPI_Send / MPI_Recv of ints on MPI_COMM_WORLD between every ordered pair. */
	for (int k = 0; k < rounds; ++k) {
		for (int p = 0; p < size; ++p) {
			if (p == rank)
				continue;
			if (rank < p) {
				check(MPI_Send(ints, elements(rank, p, k), MPI_INT, p, 1,
					       MPI_COMM_WORLD),
				      "Send");
				check(MPI_Recv(intsIn, kMaxElements, MPI_INT, p, 1, MPI_COMM_WORLD,
					       MPI_STATUS_IGNORE),
				      "Recv");
			} else {
				check(MPI_Recv(intsIn, kMaxElements, MPI_INT, p, 1, MPI_COMM_WORLD,
					       MPI_STATUS_IGNORE),
				      "Recv");
				check(MPI_Send(ints, elements(rank, p, k), MPI_INT, p, 1,
					       MPI_COMM_WORLD),
				      "Send");
			}
		}
		if (MALLEO_Iteration_mark)
			MALLEO_Iteration_mark();
	}

	/* B: MPI_Isend / MPI_Irecv of doubles on a split communicator whose rank order is reversed,
	 * so every sub rank must be translated to its world rank. */
	MPI_Comm split;
	check(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split), "Comm_split");
	int subRank, subSize;
	MPI_Comm_rank(split, &subRank);
	MPI_Comm_size(split, &subSize);
	MPI_Group splitGroup, worldGroup;
	MPI_Comm_group(split, &splitGroup);
	MPI_Comm_group(MPI_COMM_WORLD, &worldGroup);
	for (int k = 0; k < rounds; ++k) {
		MPI_Request requests[2 * 8];
		int n = 0;
		for (int p = 0; p < subSize; ++p) {
			if (p == subRank)
				continue;
			int world;
			MPI_Group_translate_ranks(splitGroup, 1, &p, worldGroup, &world);
			check(
			    MPI_Irecv(doublesIn + 8 * n, 8, MPI_DOUBLE, p, 2, split, &requests[n]),
			    "Irecv");
			++n;
			check(MPI_Isend(doubles, elements(rank, world, k) % 9, MPI_DOUBLE, p, 2,
					split, &requests[n]),
			      "Isend");
			++n;
		}
		check(MPI_Waitall(n, requests, statuses), "Waitall");
	}
	MPI_Group_free(&splitGroup);
	MPI_Group_free(&worldGroup);
	MPI_Comm_free(&split);

	/* C: MPI_Sendrecv of chars around a ring on a duplicate of MPI_COMM_WORLD. */
	MPI_Comm dup;
	check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "Comm_dup");
	const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	for (int k = 0; k < rounds; ++k)
		check(MPI_Sendrecv(chars, elements(rank, next, k), MPI_CHAR, next, 3, charsIn,
				   kMaxElements, MPI_CHAR, prev, 3, dup, MPI_STATUS_IGNORE),
		      "Sendrecv");

	/* D: persistent MPI_Send_init / MPI_Recv_init of 5 ints on the duplicate, started `rounds`
	 * times. */
	MPI_Request persistent[2];
	check(MPI_Recv_init(intsIn, 5, MPI_INT, prev, 4, dup, &persistent[0]), "Recv_init");
	check(MPI_Send_init(ints, 5, MPI_INT, next, 4, dup, &persistent[1]), "Send_init");
	for (int k = 0; k < rounds; ++k) {
		check(MPI_Startall(2, persistent), "Startall");
		check(MPI_Waitall(2, persistent, statuses), "Waitall");
	}
	MPI_Request_free(&persistent[0]);
	MPI_Request_free(&persistent[1]);
	MPI_Comm_free(&dup);

	/* E: collectives on MPI_COMM_WORLD. */
	for (int k = 0; k < rounds; ++k) {
		check(MPI_Bcast(ints, 100, MPI_INT, 0, MPI_COMM_WORLD), "Bcast");
		check(MPI_Allreduce(doubles, doublesIn, 16, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
		      "Allreduce");
	}
	check(MPI_Barrier(MPI_COMM_WORLD), "Barrier");
	check(
	    MPI_Gather(ints, 3, MPI_INT, rank == 0 ? intsIn : NULL, 3, MPI_INT, 0, MPI_COMM_WORLD),
	    "Gather");
	check(MPI_Alltoall(ints, 2, MPI_INT, intsIn, 2, MPI_INT, MPI_COMM_WORLD), "Alltoall");
	MPI_Request request;
	check(MPI_Ibcast(chars, 10, MPI_CHAR, size - 1, MPI_COMM_WORLD, &request), "Ibcast");
	check(MPI_Wait(&request, MPI_STATUS_IGNORE), "Wait");
	check(MPI_Iallreduce(MPI_IN_PLACE, ints, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request),
	      "Iallreduce");
	check(MPI_Wait(&request, MPI_STATUS_IGNORE), "Wait");

	/* F: a send to MPI_PROC_NULL is a call but no message. */
	check(MPI_Send(ints, 7, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD),
	      "Send to MPI_PROC_NULL");

	if (rank == 0)
		printf("traffic: %d ranks, %d rounds done\n", size, rounds);
	MPI_Finalize();
	return 0;
}
