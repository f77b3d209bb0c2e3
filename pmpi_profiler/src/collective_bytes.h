// SPDX-License-Identifier: Apache-2.0
#pragma once

// The "bytes" of a collective call: the size of this rank's input (send) buffer as the call
// describes it. With MPI_IN_PLACE the input lives in the receive buffer, so its size comes from the
// receive arguments. Neighbourhood shapes count per out-neighbour. Counts are templates so the
// MPI-4 `_c` (MPI_Count) variants share them; type arrays are templates so Fortran handle arrays
// (FortranHandles) index the same way as C ones.

#include "comm_table.h"
#include "mpi_include.h"

namespace malleo::pmpi {

template <typename Count> inline uint64_t messageBytes(Count count, MPI_Datatype type)
{
	if (count <= 0)
		return 0;
	int size = 0;
	PMPI_Type_size(type, &size);
	return size > 0 ? uint64_t(count) * uint64_t(size) : 0;
}

inline int groupSize(MPI_Comm comm)
{
	const CommInfo *info = commInfo(comm);
	return info ? info->size : 0;
}

inline bool isRoot(MPI_Comm comm, int root)
{
	if (root == MPI_ROOT)
		return true;
	const CommInfo *info = commInfo(comm);
	return info && !info->inter && info->myRank == root;
}

inline int myRank(MPI_Comm comm)
{
	const CommInfo *info = commInfo(comm);
	return info ? info->myRank : 0;
}

inline uint64_t collBytes_none()
{
	return 0;
}

template <typename Count>
inline uint64_t collBytes_root(Count count, MPI_Datatype type, int root, MPI_Comm comm)
{
	return isRoot(comm, root) ? messageBytes(count, type) : 0;
}

template <typename Count> inline uint64_t collBytes_all(Count count, MPI_Datatype type)
{
	return messageBytes(count, type);
}

template <typename Count>
inline uint64_t collBytes_gather(bool inPlace, Count scount, MPI_Datatype stype, Count rcount,
				 MPI_Datatype rtype, MPI_Comm)
{
	return inPlace ? messageBytes(rcount, rtype) : messageBytes(scount, stype);
}

template <typename Count, typename Counts>
inline uint64_t collBytes_gatherv(bool inPlace, Count scount, MPI_Datatype stype, Counts rcounts,
				  MPI_Datatype rtype, MPI_Comm comm)
{
	return inPlace ? messageBytes(rcounts[myRank(comm)], rtype) : messageBytes(scount, stype);
}

template <typename Count>
inline uint64_t collBytes_scatter(Count scount, MPI_Datatype stype, int root, MPI_Comm comm)
{
	return isRoot(comm, root) ? uint64_t(groupSize(comm)) * messageBytes(scount, stype) : 0;
}

template <typename Counts> inline uint64_t sumBytes(Counts counts, MPI_Datatype type, int n)
{
	uint64_t total = 0;
	for (int i = 0; i < n; ++i)
		total += messageBytes(counts[i], type);
	return total;
}

template <typename Counts, typename Types>
inline uint64_t sumBytesTyped(Counts counts, const Types &types, int n)
{
	uint64_t total = 0;
	for (int i = 0; i < n; ++i)
		total += messageBytes(counts[i], types[i]);
	return total;
}

template <typename Counts>
inline uint64_t collBytes_scatterv(Counts scounts, MPI_Datatype stype, int root, MPI_Comm comm)
{
	return isRoot(comm, root) ? sumBytes(scounts, stype, groupSize(comm)) : 0;
}

template <typename Count>
inline uint64_t collBytes_alltoall(bool inPlace, Count scount, MPI_Datatype stype, Count rcount,
				   MPI_Datatype rtype, MPI_Comm comm)
{
	return uint64_t(groupSize(comm)) *
	       (inPlace ? messageBytes(rcount, rtype) : messageBytes(scount, stype));
}

template <typename Counts>
inline uint64_t collBytes_alltoallv(bool inPlace, Counts scounts, MPI_Datatype stype,
				    Counts rcounts, MPI_Datatype rtype, MPI_Comm comm)
{
	const int n = groupSize(comm);
	return inPlace ? sumBytes(rcounts, rtype, n) : sumBytes(scounts, stype, n);
}

template <typename Counts, typename Types>
inline uint64_t collBytes_alltoallw(bool inPlace, Counts scounts, const Types &stypes,
				    Counts rcounts, const Types &rtypes, MPI_Comm comm)
{
	const int n = groupSize(comm);
	return inPlace ? sumBytesTyped(rcounts, rtypes, n) : sumBytesTyped(scounts, stypes, n);
}

template <typename Counts>
inline uint64_t collBytes_reduce_scatter(Counts rcounts, MPI_Datatype type, MPI_Comm comm)
{
	return sumBytes(rcounts, type, groupSize(comm));
}

template <typename Count>
inline uint64_t collBytes_reduce_scatter_block(Count rcount, MPI_Datatype type, MPI_Comm comm)
{
	return uint64_t(groupSize(comm)) * messageBytes(rcount, type);
}

// Neighbor_allgather passes a receive count, Neighbor_allgatherv an array of them: neither is used.
template <typename Count, typename Received>
inline uint64_t collBytes_ngather(bool, Count scount, MPI_Datatype stype, Received, MPI_Datatype,
				  MPI_Comm)
{
	return messageBytes(scount, stype);
}

template <typename Count>
inline uint64_t collBytes_nalltoall(bool, Count scount, MPI_Datatype stype, Count, MPI_Datatype,
				    MPI_Comm comm)
{
	return uint64_t(outDegree(comm, commInfo(comm))) * messageBytes(scount, stype);
}

template <typename Counts>
inline uint64_t collBytes_nalltoallv(bool, Counts scounts, MPI_Datatype stype, Counts, MPI_Datatype,
				     MPI_Comm comm)
{
	return sumBytes(scounts, stype, outDegree(comm, commInfo(comm)));
}

template <typename Counts, typename Types>
inline uint64_t collBytes_nalltoallw(bool, Counts scounts, const Types &stypes, Counts,
				     const Types &, MPI_Comm comm)
{
	return sumBytesTyped(scounts, stypes, outDegree(comm, commInfo(comm)));
}

} // namespace malleo::pmpi
