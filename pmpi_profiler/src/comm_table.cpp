// SPDX-License-Identifier: Apache-2.0
#include "comm_table.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace malleo::pmpi {

CommInfo *gWorldInfo = nullptr;

namespace {

// Open addressing, written under a lock at communicator creation and free, read without one on the
// hot path. A slot's key is never cleared, only its info, so a probe sequence is never cut short by
// a freed communicator.
struct Slot {
	std::atomic<uint64_t> key{0};
	std::atomic<CommInfo *> info{nullptr};
};

constexpr unsigned kSlots = 4096;
Slot gSlots[kSlots];
std::mutex gLock;
// Infos taken out of the table (a communicator freed, a slot written again), under gLock. A reader on the hot path
// may still hold one, so they are freed only after MPI_Finalize, when no MPI call may be in flight. Never destroyed:
// a program that exits without MPI_Finalize keeps them reachable to the end.
std::vector<CommInfo *> &gRetired = *new std::vector<CommInfo *>;

unsigned slotOf(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return unsigned(key) & (kSlots - 1);
}

CommInfo *buildInfo(MPI_Comm comm)
{
	int inter = 0;
	PMPI_Comm_test_inter(comm, &inter);
	MPI_Group group, world;
	if (inter)
		PMPI_Comm_remote_group(comm, &group);
	else
		PMPI_Comm_group(comm, &group);
	int size = 0;
	PMPI_Group_size(group, &size);
	void *mem = std::malloc(sizeof(CommInfo) + sizeof(int) * unsigned(size > 0 ? size : 1));
	if (!mem) {
		PMPI_Group_free(&group);
		return nullptr;
	}
	auto *info = new (mem) CommInfo{size, 0, inter != 0, {-1}, nullptr};
	info->worldRank = reinterpret_cast<int *>(info + 1);
	PMPI_Comm_rank(comm, &info->myRank);
	int *ranks = static_cast<int *>(std::malloc(sizeof(int) * unsigned(size > 0 ? size : 1)));
	for (int i = 0; i < size; ++i)
		ranks[i] = i;
	PMPI_Comm_group(MPI_COMM_WORLD, &world);
	PMPI_Group_translate_ranks(group, size, ranks, world, info->worldRank);
	for (int i = 0; i < size; ++i)
		if (info->worldRank[i] == MPI_UNDEFINED)
			info->worldRank[i] = -1;
	std::free(ranks);
	PMPI_Group_free(&world);
	PMPI_Group_free(&group);
	return info;
}

// Caller holds gLock.
void retire(CommInfo *info)
{
	if (info && info != gWorldInfo)
		gRetired.push_back(info);
}

// Caller holds gLock. The info replaced is retired, not freed: another thread may still be reading it.
void store(uint64_t key, CommInfo *info)
{
	for (unsigned i = slotOf(key), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
		uint64_t k = gSlots[i].key.load(std::memory_order_relaxed);
		if (k == key || k == 0) {
			retire(gSlots[i].info.exchange(info, std::memory_order_acq_rel));
			gSlots[i].key.store(key, std::memory_order_release);
			return;
		}
	}
}

} // namespace

CommInfo *findComm(uint64_t key)
{
	for (unsigned i = slotOf(key), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
		uint64_t k = gSlots[i].key.load(std::memory_order_acquire);
		if (k == key)
			return gSlots[i].info.load(std::memory_order_acquire);
		if (k == 0)
			return nullptr;
	}
	return nullptr;
}

// A communicator we did not see being created (an MPI-internal one, or one from an unwrapped
// constructor).
CommInfo *lookupCommSlow(MPI_Comm comm)
{
	if (comm == MPI_COMM_NULL)
		return nullptr;
	CommInfo *info = buildInfo(comm);
	std::lock_guard<std::mutex> lock(gLock);
	store(handleKey(comm), info);
	return info;
}

void rememberComm(MPI_Comm comm)
{
	if (comm == MPI_COMM_NULL || comm == MPI_COMM_WORLD)
		return;
	CommInfo *info = buildInfo(comm);
	std::lock_guard<std::mutex> lock(gLock);
	store(handleKey(comm), info);
}

void forgetComm(MPI_Comm comm)
{
	const uint64_t key = handleKey(comm);
	std::lock_guard<std::mutex> lock(gLock);
	for (unsigned i = slotOf(key), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
		uint64_t k = gSlots[i].key.load(std::memory_order_relaxed);
		if (k == key) {
			retire(gSlots[i].info.exchange(nullptr, std::memory_order_acq_rel));
			return;
		}
		if (k == 0)
			return;
	}
}

void releaseRetiredComms()
{
	std::lock_guard<std::mutex> lock(gLock);
	for (CommInfo *info : gRetired)
		std::free(info); // trivially destructible but for the atomic int, which needs no destructor
	gRetired.clear();
	gRetired.shrink_to_fit();
}

int outDegree(MPI_Comm comm, CommInfo *info)
{
	int degree = info ? info->outDegree.load(std::memory_order_relaxed) : -1;
	if (degree >= 0)
		return degree;
	int topo = MPI_UNDEFINED;
	PMPI_Topo_test(comm, &topo);
	degree = 0;
	if (topo == MPI_CART) {
		int ndims = 0;
		PMPI_Cartdim_get(comm, &ndims);
		degree = 2 * ndims;
	} else if (topo == MPI_GRAPH) {
		PMPI_Graph_neighbors_count(comm, info ? info->myRank : 0, &degree);
	} else if (topo == MPI_DIST_GRAPH) {
		int in = 0, weighted = 0;
		PMPI_Dist_graph_neighbors_count(comm, &in, &degree, &weighted);
	}
	if (info)
		info->outDegree.store(degree, std::memory_order_relaxed);
	return degree;
}

} // namespace malleo::pmpi
