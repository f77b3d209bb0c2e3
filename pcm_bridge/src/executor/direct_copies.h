// SPDX-License-Identifier: Apache-2.0
// Copies straight between the memories of two processes on one host, without an MPI message: the receiver reads a
// share of a transfer's elements from the sender's old buffer with process_vm_readv, the sender writes the rest into
// the receiver's new buffer with process_vm_writev. That is the single copy Open MPI's shared-memory transport makes
// for a large message too, but it needs nothing from the other end once the buffers' addresses are known, where
// MPI's rendezvous waits for the sender to post its send (a sender without a core delays its receiver: more
// processes than cores is the usual case during a split); and between processes of different MPI jobs (spawn mode:
// every MPI_Comm_spawn call is a job of its own) Open MPI 4.1 has no shared memory at all, its messages go through
// TCP over loopback. executor.cpp runs these copies inside its steps and exchanges the acknowledgements.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "redistribution/schedule.h"

namespace malleo::pcm {

// How a transfer between two ranks travels. A message is MPI's (between processes of one job on one host, Open MPI
// and MPICH copy it with the receiver's process_vm_readv themselves). A direct transfer is this executor's own: the
// receiver reads its first `pulled` elements from the sender's old buffer (process_vm_readv), the sender writes the
// rest into the receiver's new buffer (process_vm_writev), and each end that copied tells the other when it is done.
struct Route {
	bool direct = false;
	std::int64_t pulled = 0;
};

// Routes every transfer of a schedule, the same on every rank. Two processes on one host whose memory the copier may
// access (a probe of a known word) move data directly; any other pair, and any element type that is not plain bytes,
// by MPI messages. Were the receiver to copy everything, a rank that only sends would idle while a rank that receives
// from several copies it all (a merge's survivor), and with more processes than cores every copier that idles is a
// core that could have been copying. So each direct transfer is shared between its ends so that every rank copies
// about as much: starting from the receivers' doing it all, a few passes over the transfers move each one's split
// point to even out the loads of its two ends (like a diffusion; in a 4 -> 2 merge each of the four copies about 3/4
// of a block, where the receivers alone would copy 1 and 2 blocks).
class DirectPeers
{
	// What the ranks tell each other about themselves: six int64 words.
	struct Peer {
		std::int64_t status, host, pid, oldBuffer, newBuffer, probe;
	};

public:
	// Collective over `comm`. `status`: whether this rank can run the schedule (the executor's preflight); the
	// ranks agree on it in the same gather, and on any error all of them return one (this rank's own, or the first
	// other) before looking at the schedule. `contiguous`: the element type is plain bytes (the same on every
	// rank); otherwise every transfer is a message. `extent`: the bytes of an element.
	int setUp(MPI_Comm comm, int rank, int status, const void* old_buffer, void* new_buffer, bool contiguous,
		  MPI_Aint extent, const Schedule& schedule);

	bool direct(const Transfer& transfer) const { return route(transfer).direct; }
	// Elements of a transfer the receiver copies directly, and the sender (0 and 0 for a message or a local copy).
	std::int64_t pulled(const Transfer& transfer) const { return route(transfer).pulled; }
	std::int64_t pushed(const Transfer& transfer) const
	{
		return direct(transfer) ? elementCount(transfer.source) - pulled(transfer) : 0;
	}

	// Copies the receiver's share from the sender's old buffer into this rank's new buffer.
	int pull(const Transfer& transfer, void* new_buffer, MPI_Aint extent) const;
	// Copies the sender's share from this rank's old buffer into the receiver's new buffer.
	int push(const Transfer& transfer, const void* old_buffer, MPI_Aint extent) const;

private:
	const Route& route(const Transfer& transfer) const
	{
		return routes_[static_cast<std::size_t>(&transfer - base_)];
	}
	void share(const Schedule& schedule, const std::vector<int>& reach, std::size_t n, MPI_Aint extent);
	static bool accessible(const Peer& peer);

	const Transfer* base_ = nullptr;
	std::vector<Route> routes_;  // [transfer index in the schedule]; a local transfer's is never direct
	std::vector<Peer> peers_;
};

}  // namespace malleo::pcm
