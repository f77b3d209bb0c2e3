// SPDX-License-Identifier: Apache-2.0
#include "executor/direct_copies.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <utility>

#include <sys/uio.h>
#include <unistd.h>

#include "executor/host.h"

namespace malleo::pcm {

namespace {

// A word every process holds at an address it tells its peers: reading it tells whether the peer's memory is
// accessible (accessible()).
constexpr std::uint64_t kProbeWord = 0x6d616c6c656f2121ULL;
constexpr int kSharePasses = 8;

// Below this many bytes a transfer is not shared between its two ends: a second copier would cost a system call and
// an acknowledgement for little.
constexpr std::int64_t kShareMin = std::int64_t{64} << 10;

void advance(std::vector<iovec>& vectors, std::size_t& index, std::size_t bytes)
{
	while (bytes > 0 && index < vectors.size()) {
		const std::size_t step = std::min(bytes, vectors[index].iov_len);
		vectors[index].iov_base = static_cast<char*>(vectors[index].iov_base) + step;
		vectors[index].iov_len -= step;
		bytes -= step;
		if (vectors[index].iov_len == 0)
			++index;
	}
	while (index < vectors.size() && vectors[index].iov_len == 0)
		++index;
}

// The segments of a buffer at `base` (here or in a peer, where it is an address the peer gave).
std::vector<iovec> vectors(std::intptr_t base, const std::vector<Segment>& segments, MPI_Aint extent)
{
	std::vector<iovec> result;
	for (const Segment& segment : segments)
		result.push_back({reinterpret_cast<char*>(base + segment.offset * extent),
				  static_cast<std::size_t>(segment.count * extent)});
	return result;
}
std::vector<iovec> vectors(const void* base, const std::vector<Segment>& segments, MPI_Aint extent)
{
	return vectors(reinterpret_cast<std::intptr_t>(base), segments, extent);
}

// process_vm_readv/writev take at most IOV_MAX vectors a call and may stop short; this goes on until all is
// copied.
using CopyCall = ssize_t (*)(pid_t, const iovec*, unsigned long, const iovec*, unsigned long, unsigned long);
int copy(CopyCall call, std::int64_t peer_pid, std::vector<iovec> local, std::vector<iovec> remote)
{
	const auto pid = static_cast<pid_t>(peer_pid);
	std::size_t l = 0, r = 0;
	while (l < local.size() && r < remote.size()) {
		const auto nl = static_cast<unsigned long>(std::min<std::size_t>(local.size() - l, IOV_MAX));
		const auto nr = static_cast<unsigned long>(std::min<std::size_t>(remote.size() - r, IOV_MAX));
		const ssize_t got = call(pid, &local[l], nl, &remote[r], nr, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return MPI_ERR_OTHER;
		advance(local, l, static_cast<std::size_t>(got));
		advance(remote, r, static_cast<std::size_t>(got));
	}
	return l == local.size() && r == remote.size() ? MPI_SUCCESS : MPI_ERR_OTHER;
}

}  // namespace

int DirectPeers::setUp(MPI_Comm comm, int rank, int status, const void* old_buffer, void* new_buffer, bool contiguous,
		       MPI_Aint extent, const Schedule& schedule)
{
	int size = 0;
	MPI_Comm_size(comm, &size);
	const auto n = static_cast<std::size_t>(size);
	base_ = schedule.transfers.data();
	routes_.assign(schedule.transfers.size(), Route{});
	const Peer mine{status, hostKey(), static_cast<std::int64_t>(getpid()),
			reinterpret_cast<std::intptr_t>(old_buffer), reinterpret_cast<std::intptr_t>(new_buffer),
			reinterpret_cast<std::intptr_t>(&kProbeWord)};
	peers_.resize(n);
	int rc = MPI_Allgather(&mine, 6, MPI_INT64_T, peers_.data(), 6, MPI_INT64_T, comm);
	if (rc != MPI_SUCCESS)
		return rc;
	if (status != MPI_SUCCESS)
		return status;
	for (const Peer& peer : peers_)
		if (peer.status != MPI_SUCCESS)
			return static_cast<int>(peer.status);
	// Probed only towards the ranks this one exchanges data with, once each.
	std::vector<int> reachable(n, -1);  // -1: not probed
	auto reaches = [&](int q) {
		int& known = reachable[static_cast<std::size_t>(q)];
		const auto& peer = peers_[static_cast<std::size_t>(q)];
		if (known < 0)
			known = contiguous && peer.host == mine.host && accessible(peer);
		return known;
	};
	// reach[2 i]: transfer i's receiver may access its sender's memory, reach[2 i + 1]: the sender the
	// receiver's. Each end fills in its own, and one reduction gives every rank the same table, as large as
	// the schedule (for block1d, a few entries per process) rather than one entry per pair of processes.
	std::vector<int> reach(2 * schedule.transfers.size(), 0);
	for (std::size_t i = 0; i < schedule.transfers.size(); ++i) {
		const Transfer& transfer = schedule.transfers[i];
		if (transfer.from == transfer.to)
			continue;
		if (transfer.to == rank)
			reach[2 * i] = reaches(transfer.from);
		if (transfer.from == rank)
			reach[2 * i + 1] = reaches(transfer.to);
	}
	rc = MPI_Allreduce(MPI_IN_PLACE, reach.data(), static_cast<int>(reach.size()), MPI_INT, MPI_MAX, comm);
	if (rc != MPI_SUCCESS)
		return rc;

	share(schedule, reach, n, extent);
	return MPI_SUCCESS;
}

int DirectPeers::pull(const Transfer& transfer, void* new_buffer, MPI_Aint extent) const
{
	const Peer& peer = peers_[static_cast<std::size_t>(transfer.from)];
	const std::int64_t count = pulled(transfer);
	return copy(process_vm_readv, peer.pid, vectors(new_buffer, slice(transfer.destination, 0, count), extent),
		    vectors(peer.oldBuffer, slice(transfer.source, 0, count), extent));
}

int DirectPeers::push(const Transfer& transfer, const void* old_buffer, MPI_Aint extent) const
{
	const Peer& peer = peers_[static_cast<std::size_t>(transfer.to)];
	const std::int64_t skip = pulled(transfer), count = pushed(transfer);
	return copy(process_vm_writev, peer.pid, vectors(old_buffer, slice(transfer.source, skip, count), extent),
		    vectors(peer.newBuffer, slice(transfer.destination, skip, count), extent));
}

// The routes and shares (see the class's comment). Integer arithmetic on data every rank has, so every rank computes
// the same.
void DirectPeers::share(const Schedule& schedule, const std::vector<int>& reach, std::size_t n, MPI_Aint extent)
{
	std::vector<std::int64_t> load(n, 0);  // elements each rank copies
	std::vector<std::pair<std::size_t, std::int64_t>> shared;  // transfers both ends may copy, their elements
	for (std::size_t i = 0; i < schedule.transfers.size(); ++i) {
		const Transfer& transfer = schedule.transfers[i];
		const auto from = static_cast<std::size_t>(transfer.from), to = static_cast<std::size_t>(transfer.to);
		const bool can_pull = reach[2 * i], can_push = reach[2 * i + 1];
		const std::int64_t count = elementCount(transfer.source);
		if (from == to || (!can_pull && !can_push))
			continue;
		routes_[i] = {true, can_pull ? count : 0};
		load[can_pull ? to : from] += count;
		if (can_pull && can_push && count * extent >= 2 * kShareMin)
			shared.emplace_back(i, count);
	}
	const std::int64_t least = (kShareMin + extent - 1) / extent;
	for (int pass = 0; pass < kSharePasses; ++pass)
		for (const auto& [i, count] : shared) {
			const Transfer& transfer = schedule.transfers[i];
			const auto from = static_cast<std::size_t>(transfer.from);
			const auto to = static_cast<std::size_t>(transfer.to);
			std::int64_t& pulled = routes_[i].pulled;
			// The two ends' loads without this transfer, and the split that evens them out.
			const std::int64_t receiver = load[to] - pulled, sender = load[from] - (count - pulled);
			std::int64_t even = std::clamp<std::int64_t>((sender - receiver + count) / 2, 0, count);
			if (even < least)
				even = 0;
			else if (count - even < least)
				even = count;
			load[to] = receiver + even;
			load[from] = sender + count - even;
			pulled = even;
		}
}

// Whether this process may access the peer's memory: it reads a known word of it (ptrace rules may forbid it; the
// same rules govern writing).
bool DirectPeers::accessible(const Peer& peer)
{
	std::uint64_t word = 0;
	iovec local{&word, sizeof word};
	iovec remote{reinterpret_cast<void*>(static_cast<std::intptr_t>(peer.probe)), sizeof word};
	return process_vm_readv(static_cast<pid_t>(peer.pid), &local, 1, &remote, 1, 0) ==
		       static_cast<ssize_t>(sizeof word) &&
	       word == kProbeWord;
}

}  // namespace malleo::pcm
