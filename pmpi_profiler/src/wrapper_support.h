// SPDX-License-Identifier: Apache-2.0
#pragma once

// Everything the generated wrappers call. The recording functions are inline: each is a handful of
// counter updates into the calling thread's own counters.

#include <atomic>

#include "clock.h"
#include "collective_bytes.h"
#include "comm_table.h"
#include MALLEO_PMPI_FUNCTION_TABLE
#include "mpi_include.h"
#include "process_state.h"
#include "thread_counters.h"
#include "world_substitution.h"

#define MALLEO_EXPORT __attribute__((visibility("default")))

namespace malleo::pmpi {

MALLEO_HOT void countMessage(ThreadCounters *ts, OpKind kind, int peer, uint64_t bytes)
{
	ts->histogram[int(kind)][sizeBin(bytes)].add(1);
	if (kind != OpKind::P2p || !perPeer())
		return;
	PeerCounters *peers = peerCounters(ts);
	PeerCounters &to = peers[peer >= 0 && peer < worldSize() ? peer : worldSize()];
	to.messages.add(1);
	to.bytes.add(bytes);
}

template <typename Count>
MALLEO_HOT void recordSend(ThreadCounters *ts, int fn, Count count, MPI_Datatype type, int dest,
			   MPI_Comm comm)
{
	if (dest < 0) // MPI_PROC_NULL: the call completes without a message
		return;
	const uint64_t bytes = messageBytes(count, type);
	ts->fn[fn].bytes.add(bytes);
	countMessage(ts, OpKind::P2p, perPeer() ? worldPeer(comm, dest) : -1, bytes);
}

MALLEO_HOT void recordColl(ThreadCounters *ts, int fn, uint64_t bytes)
{
	ts->fn[fn].bytes.add(bytes);
	ts->histogram[int(OpKind::Coll)][sizeBin(bytes)].add(1);
}

MALLEO_HOT void recordRma(ThreadCounters *ts, int fn, uint64_t bytes)
{
	ts->fn[fn].bytes.add(bytes);
	ts->histogram[int(OpKind::Rma)][sizeBin(bytes)].add(1);
}

MALLEO_HOT PersistentOp &persistentSlot(ThreadCounters *ts, uint64_t key)
{
	return ts->persistent[(key ^ (key >> 12) ^ (key >> 24)) & (kPersistentSlots - 1)];
}

// A persistent request started by another thread than the one that created it, or evicted by a
// colliding one, is not found at MPI_Start: its calls are still counted, its bytes are not.
inline void rememberPersistent(ThreadCounters *ts, int fn, OpKind kind, int peer, uint64_t bytes,
			       MPI_Request request)
{
	PersistentOp &op = persistentSlot(ts, handleKey(request));
	op = PersistentOp{handleKey(request), fn, kind, peer, bytes};
}

MALLEO_HOT void onStart(ThreadCounters *ts, MPI_Request request)
{
	const uint64_t key = handleKey(request);
	const PersistentOp &op = persistentSlot(ts, key);
	if (op.key != key || op.peer == kNoPeer)
		return;
	ts->fn[op.fn].bytes.add(op.bytes);
	countMessage(ts, op.kind, op.peer, op.bytes);
}

inline void forgetPersistent(ThreadCounters *ts, MPI_Request request)
{
	const uint64_t key = handleKey(request);
	PersistentOp &op = persistentSlot(ts, key);
	if (op.key == key)
		op.key = 0;
}

// Fortran support (Open MPI, whose Fortran layer calls PMPI_* and so bypasses the C wrappers).

void *resolveFortranEntry(const char *name);

inline void *fortranEntry(std::atomic<void *> &slot, const char *name)
{
	void *entry = slot.load(std::memory_order_relaxed);
	if (!entry) [[unlikely]] {
		entry = resolveFortranEntry(name);
		slot.store(entry, std::memory_order_relaxed);
	}
	return entry;
}

bool isFortranInPlace(const void *buffer);

// An array of Fortran handles, indexed like the C array it stands for.
template <typename Handle> struct FortranHandles {
	const MPI_Fint *values;
	Handle operator[](int i) const;
};

template <> inline MPI_Datatype FortranHandles<MPI_Datatype>::operator[](int i) const
{
	return PMPI_Type_f2c(values[i]);
}

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran count arrays are read as int arrays");

} // namespace malleo::pmpi
