// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>

#include "mpi_include.h"

namespace malleo::pmpi {

// What the hot path needs to know about a communicator: its (remote) size, our rank in it and, for
// each of its ranks, the rank in MPI_COMM_WORLD (-1 for processes outside it, e.g. spawned ones).
struct CommInfo {
	int size;
	int myRank;
	bool inter;
	std::atomic<int> outDegree; // -1 until a neighbourhood collective asks
	int *worldRank;		    // size entries, allocated with the struct
};

inline constexpr int kNoPeer = -2; // MPI_PROC_NULL and the like: no message at all

extern CommInfo *gWorldInfo;

CommInfo *lookupCommSlow(MPI_Comm comm);
CommInfo *findComm(uint64_t key);
void rememberComm(MPI_Comm comm);
void forgetComm(MPI_Comm comm);
// Frees the infos of freed communicators; after MPI_Finalize only (readers hold infos without a lock).
void releaseRetiredComms();
int outDegree(MPI_Comm comm, CommInfo *info);

inline CommInfo *commInfo(MPI_Comm comm)
{
	if (comm == MPI_COMM_WORLD)
		return gWorldInfo;
	CommInfo *info = findComm(handleKey(comm));
	if (!info) [[unlikely]]
		info = lookupCommSlow(comm);
	return info;
}

// The world rank behind `rank` of `comm`; -1 outside MPI_COMM_WORLD, kNoPeer when no message is
// sent.
inline int worldPeer(MPI_Comm comm, int rank)
{
	if (rank < 0)
		return kNoPeer;
	if (comm == MPI_COMM_WORLD)
		return rank;
	const CommInfo *info = commInfo(comm);
	return info && rank < info->size ? info->worldRank[rank] : -1;
}

} // namespace malleo::pmpi
