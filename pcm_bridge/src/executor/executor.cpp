// SPDX-License-Identifier: Apache-2.0
// Runs a schedule with nonblocking point-to-point MPI, one step after the other.
//
// Each rank posts, for each step, the receives and then the sends of its transfers, does its local copies while
// those fly, and waits for the whole step before the next (MPI_Testall, yielding the core and then sleeping between
// tests once the wait gets long: see waitPolitely). A transfer of one contiguous segment is sent straight from
// (received straight into) the buffer; several segments travel as one message described by an
// MPI_Type_create_hindexed over the element type, so nothing is staged and MPI packs as it sends. Against packing
// into a staging buffer with memcpy it was never slower and up to 4x faster on block-cyclic layouts
// (docs/performance.md, "Redistribution"). Local copies are memcpy when the element type is contiguous, otherwise a
// message to self.
//
// The work runs on the caller's communicator, which it hands over for the call (no other message in flight on it,
// MPI_ERRORS_RETURN, so that an MPI error is returned rather than aborting): the reconfigurator's communicator of a
// reconfiguration's participants, made for the operation. A duplicate of it would cost a collective of its own
// (110-210 µs with four processes on two cores, a fifth of a 10 MiB redistribution). The ranks first agree, in the
// MPI_Allgather that also tells them each other's buffers for direct copies, that every one of them can run the
// schedule — ranks inside the communicator, buffers present for the segments they hold — so a bad schedule or a
// missing buffer fails everywhere at once instead of leaving peers waiting. After that an error in one transfer does
// not stop the others: every rank still posts everything its peers expect, so all of them come back, and the first
// error is reported.
//
// Between two processes on one host that may access each other's memory, a transfer is "direct" (direct_copies.h):
// each end copies a share of it itself, and tells the other when its share is done.
#include "executor/executor.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <deque>
#include <vector>

#include <sched.h>

#include "executor/direct_copies.h"
#include "memory/page_move.h"

namespace malleo::pcm {

namespace {

// How one side of a transfer is handed to MPI.
struct Message {
	void* buffer = nullptr;
	int count = 0;
	MPI_Datatype type = MPI_DATATYPE_NULL;
	bool owned = false;  // a derived type to free after the step
};

int describe(const void* base, const std::vector<Segment>& segments, MPI_Datatype element, MPI_Aint extent,
	     Message& message)
{
	auto* bytes = static_cast<char*>(const_cast<void*>(base));
	if (segments.size() == 1 && segments[0].count <= INT_MAX) {
		message.buffer = bytes + segments[0].offset * extent;
		message.count = static_cast<int>(segments[0].count);
		message.type = element;
		return MPI_SUCCESS;
	}
	std::vector<int> lengths;
	std::vector<MPI_Aint> displacements;
	lengths.reserve(segments.size());
	displacements.reserve(segments.size());
	for (const Segment& segment : segments) {
		// Blocks longer than an int can say are cut, so any size goes as one message.
		for (std::int64_t done = 0; done < segment.count; done += INT_MAX) {
			lengths.push_back(static_cast<int>(std::min<std::int64_t>(segment.count - done, INT_MAX)));
			displacements.push_back(static_cast<MPI_Aint>((segment.offset + done) * extent));
		}
	}
	if (lengths.size() > static_cast<std::size_t>(INT_MAX))
		return MPI_ERR_COUNT;
	int rc = MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(), displacements.data(),
					  element, &message.type);
	if (rc != MPI_SUCCESS)
		return rc;
	rc = MPI_Type_commit(&message.type);
	if (rc != MPI_SUCCESS) {
		MPI_Type_free(&message.type);
		return rc;
	}
	message.buffer = bytes;
	message.count = 1;
	message.owned = true;
	return MPI_SUCCESS;
}

// A local transfer's runs, `copy(to, from, bytes)` for each one that is not already where it belongs. `Byte` is
// const char where the old buffer is only read (execute), char where its pages may move out (finishLocal).
template<typename Byte, typename Copy>
void copyLocally(const Transfer& transfer, Byte* from, char* to, std::size_t element_bytes, Copy copy)
{
	forEachChunk(transfer, [&](std::int64_t source, std::int64_t destination, std::int64_t count) {
		Byte* bytes = from + static_cast<std::size_t>(source) * element_bytes;
		char* place = to + static_cast<std::size_t>(destination) * element_bytes;
		if (place != bytes)
			copy(place, bytes, static_cast<std::size_t>(count) * element_bytes);
	});
}

// What this rank can check before anything moves; the ranks agree on the worst answer.
int preflight(const Schedule& schedule, int rank, int size, const void* old_buffer, const void* new_buffer,
	      std::int64_t held)
{
	for (const Transfer& transfer : schedule.transfers) {
		if (transfer.from < 0 || transfer.from >= size || transfer.to < 0 || transfer.to >= size)
			return MPI_ERR_RANK;
		if (transfer.step < 0 || transfer.step >= schedule.steps)
			return MPI_ERR_ARG;
		for (const auto* segments : {&transfer.source, &transfer.destination})
			for (const Segment& segment : *segments)
				if (segment.offset < 0 || segment.count < 0)
					return MPI_ERR_ARG;
		if (elementCount(transfer.source) != elementCount(transfer.destination))
			return MPI_ERR_ARG;
		if (transfer.from == rank && old_buffer == nullptr && elementCount(transfer.source) > 0)
			return MPI_ERR_BUFFER;
		if (transfer.to == rank && new_buffer == nullptr && elementCount(transfer.destination) > 0)
			return MPI_ERR_BUFFER;
	}
	// A new buffer that is the old one may only keep elements where they are and receive past them: anything
	// written over them would overwrite data that peers may still read and that a failure must leave intact.
	if (new_buffer && new_buffer == old_buffer && !keepsInPlace(schedule, rank, held))
		return MPI_ERR_BUFFER;
	return MPI_SUCCESS;
}

bool isContiguous(MPI_Datatype element, MPI_Aint extent)
{
	int size = 0;
	MPI_Aint lb = 0, true_lb = 0, true_extent = 0, ignored = 0;
	MPI_Type_size(element, &size);
	MPI_Type_get_extent(element, &lb, &ignored);
	MPI_Type_get_true_extent(element, &true_lb, &true_extent);
	return lb == 0 && true_lb == 0 && static_cast<MPI_Aint>(size) == extent && true_extent == extent;
}

class StepRunner
{
public:
	StepRunner(MPI_Comm comm, int rank, const ExecuteOptions& options, MPI_Datatype element, MPI_Aint extent,
		   const DirectPeers& direct, ExecuteResult& result)
	    : comm_(comm), rank_(rank), tag_(options.tag), deferLocal_(options.deferLocal), element_(element),
	      extent_(extent), direct_(direct), result_(result)
	{
		MPI_Type_size(element, &elementSize_);
		memcpyCopies_ = isContiguous(element, extent);
	}

	void run(const std::vector<const Transfer*>& step, const void* old_buffer, void* new_buffer)
	{
		// Receives first, so the sends find them posted; an end of a direct transfer waits for the other's word
		// that its share is done (the step, and so execute(), does not end before: the caller may free its
		// buffers after it).
		for (const Transfer* transfer : step)
			if (transfer->to == rank_ && transfer->from != rank_) {
				if (!direct_.direct(*transfer))
					post(*transfer, new_buffer, transfer->destination, false);
				else if (direct_.pushed(*transfer) > 0)
					awaitAck(transfer->from);
			}
		for (const Transfer* transfer : step)
			if (transfer->from == rank_ && transfer->to != rank_) {
				if (!direct_.direct(*transfer))
					post(*transfer, old_buffer, transfer->source, true);
				else if (direct_.pulled(*transfer) > 0)
					awaitAck(transfer->to);
				result_.bytesSent += elementCount(transfer->source) * elementSize_;
			}
		for (const Transfer* transfer : step)
			if (transfer->from == rank_ && transfer->to == rank_) {
				if (!memcpyCopies_) {
					post(*transfer, new_buffer, transfer->destination, false);
					post(*transfer, old_buffer, transfer->source, true);
				} else if (!deferLocal_) {
					copyLocally(*transfer, static_cast<const char*>(old_buffer),
						    static_cast<char*>(new_buffer), static_cast<std::size_t>(extent_),
						    [](char* to, const char* from, std::size_t bytes) {
							    std::memcpy(to, from, bytes);
						    });
				}
			}
		for (const Transfer* transfer : step)
			if (transfer->to == rank_ && direct_.pulled(*transfer) > 0)
				copyDirectly(direct_.pulled(*transfer), direct_.pull(*transfer, new_buffer, extent_),
					     transfer->from);
		for (const Transfer* transfer : step)
			if (transfer->from == rank_ && direct_.pushed(*transfer) > 0)
				copyDirectly(direct_.pushed(*transfer), direct_.push(*transfer, old_buffer, extent_),
					     transfer->to);
		finish();
	}

private:
	void awaitAck(int peer)
	{
		acks_.push_back(0);
		MPI_Request request = MPI_REQUEST_NULL;
		const int rc = MPI_Irecv(&acks_.back(), 1, MPI_INT, peer, tag_ + 1, comm_, &request);
		note(rc);
		if (rc == MPI_SUCCESS)
			requests_.push_back(request);
	}

	// A direct copy of `count` elements this rank did (`rc` its outcome), told to the other end.
	void copyDirectly(std::int64_t count, int rc, int peer)
	{
		note(rc);
		if (rc == MPI_SUCCESS)
			result_.bytesDirect += count * elementSize_;
		acks_.push_back(rc);
		MPI_Request request = MPI_REQUEST_NULL;
		const int sent = MPI_Isend(&acks_.back(), 1, MPI_INT, peer, tag_ + 1, comm_, &request);
		note(sent);
		if (sent == MPI_SUCCESS)
			requests_.push_back(request);
	}

	void post(const Transfer& transfer, const void* base, const std::vector<Segment>& segments, bool send)
	{
		Message message;
		int rc = describe(base, segments, element_, extent_, message);
		if (rc != MPI_SUCCESS) {
			note(rc);
			return;
		}
		MPI_Request request = MPI_REQUEST_NULL;
		if (send)
			rc = MPI_Isend(message.buffer, message.count, message.type, transfer.to, tag_, comm_, &request);
		else
			rc = MPI_Irecv(message.buffer, message.count, message.type, transfer.from, tag_, comm_,
				       &request);
		note(rc);
		if (rc == MPI_SUCCESS)
			requests_.push_back(request);
		if (message.owned)
			types_.push_back(message.type);	 // freed after the step, though MPI would allow it now
	}

	void finish()
	{
		if (!requests_.empty()) {
			std::vector<MPI_Status> statuses(requests_.size());
			int rc = waitPolitely(statuses);
			if (rc == MPI_ERR_IN_STATUS) {
				for (const MPI_Status& status : statuses)
					if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING)
						note(status.MPI_ERROR);
			}
			note(rc);
		}
		for (int ack : acks_)  // a peer's failed direct copy into or out of this rank
			note(ack);
		requests_.clear();
		acks_.clear();
		for (MPI_Datatype& type : types_)
			MPI_Type_free(&type);
		types_.clear();
	}

	// MPI_Waitall, without spinning once the wait gets long. With more processes than cores (the usual case
	// during a split here) a rank spinning in MPI_Waitall takes the core that a peer needs to copy the data in:
	// with shared memory the receiver does the copy. So: test in a tight loop for 20 µs, then yield the core
	// between tests (sched_yield) up to 1 ms, then sleep between tests, doubling the sleep up to 256 µs. A yield
	// hands the core to a peer that has work and comes back as soon as it is done, where a sleep ends 50 µs late at
	// best (the kernel's default timer slack) and up to a whole sleep after the last message; past 1 ms the step is
	// long and a rank with nothing left to do stops competing for a core at all. The yields took the 10 MiB cases
	// between four processes on two cores from 1.22 and 1.44 ms to 1.06 and 1.13 ms (medians), and left 100 MiB,
	// 300 MiB and fresh buffers as they were (figures in git history, with the change that added the yields).
	int waitPolitely(std::vector<MPI_Status>& statuses)
	{
		int count = static_cast<int>(requests_.size());
		int done = 0;
		const double started = MPI_Wtime();
		long sleep_ns = 2000;
		for (;;) {
			int rc = MPI_Testall(count, requests_.data(), &done, statuses.data());
			if (rc != MPI_SUCCESS || done)
				return rc;
			const double waited = MPI_Wtime() - started;
			if (waited < 20e-6)
				continue;
			if (waited < 1e-3) {
				sched_yield();
				continue;
			}
			timespec pause{0, sleep_ns};
			nanosleep(&pause, nullptr);
			sleep_ns = std::min(sleep_ns * 2, 256000L);
		}
	}

	void note(int rc)
	{
		if (rc != MPI_SUCCESS && result_.mpiError == MPI_SUCCESS)
			result_.mpiError = rc;
	}

	MPI_Comm comm_;
	int rank_;
	int tag_;
	bool deferLocal_;
	MPI_Datatype element_;
	MPI_Aint extent_;
	int elementSize_ = 0;
	bool memcpyCopies_ = false;
	const DirectPeers& direct_;
	ExecuteResult& result_;
	std::vector<MPI_Request> requests_;
	std::deque<int> acks_;  // the acknowledgements of direct transfers in flight (a deque: their addresses stay)
	std::vector<MPI_Datatype> types_;
};

// Below this many bytes of destination per transfer, one madvise costs about what the faults it saves do. Not
// larger: a first touch costs from a fraction of a microsecond a page on bare metal to 10 µs on a VM whose
// hypervisor keeps shadow page tables, and there a 10 MiB redistribution into fresh buffers took 1.5-1.7 times as
// long with the earlier threshold of 8 MiB (docs/notes/prefault.md).
constexpr std::int64_t kPrefaultMin = std::int64_t{64} << 10;

// Faults in, with one madvise per transfer, the pages of new_buffer that this rank will write itself. A
// reconfiguration's new buffer is usually fresh memory; left alone, its pages fault one at a time inside the copies
// (Open MPI's CMA pull takes each fault in process_vm_readv), which cost about three times the copy on the test VM at
// 100 and 300 MiB (docs/performance.md, "Redistribution"). Not faulted in: a sender's share of a direct transfer
// (its writes fault the pages, so that cost is the sender's), elements kept in place (a new buffer that is the old
// one), and local copies left for finishLocal, which may move pages instead (populatePages, page_move.h).
void prefault(const std::vector<const Transfer*>& mine, int rank, const void* old_buffer, void* new_buffer,
	      MPI_Aint extent, bool defer_local, const DirectPeers& direct)
{
	for (const Transfer* transfer : mine) {
		const bool local = transfer->from == rank;
		if (transfer->to != rank || !new_buffer || (local && (defer_local || new_buffer == old_buffer)))
			continue;
		// What this rank writes: a direct transfer's pulled part, a message's whole destination.
		const std::vector<Segment> written = direct.direct(*transfer)
							     ? slice(transfer->destination, 0, direct.pulled(*transfer))
							     : transfer->destination;
		std::int64_t first = INT64_MAX, end = 0;
		for (const Segment& segment : written) {
			first = std::min(first, segment.offset);
			end = std::max(end, segment.offset + segment.count);
		}
		if (end <= first || (end - first) * extent < kPrefaultMin)
			continue;
		char* const at = static_cast<char*>(new_buffer) + first * extent;
		const auto bytes = static_cast<std::size_t>((end - first) * extent);
		// A destination whose first page is there was written before (a reused buffer, a grown block's room the
		// kernel has not taken back): walking its pages would cost more than it saves.
		if (!firstPageResident(at, bytes))
			populatePages(at, bytes);
	}
}

}  // namespace

ExecuteResult execute(MPI_Comm comm, const Schedule& schedule, const void* old_buffer, void* new_buffer,
		      MPI_Datatype element, const ExecuteOptions& options)
{
	ExecuteResult result;
	double start = MPI_Wtime();
	auto done = [&] {
		result.seconds = MPI_Wtime() - start;
		return result;
	};

	int rank = 0, size = 0;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	MPI_Aint lb = 0, extent = 0;
	int local = MPI_Type_get_extent(element, &lb, &extent);
	if (local == MPI_SUCCESS)
		local = preflight(schedule, rank, size, old_buffer, new_buffer, options.held);
	if (local == MPI_SUCCESS && options.deferLocal && !isContiguous(element, extent))
		local = MPI_ERR_TYPE;  // finishLocal copies bytes

	// This rank's transfers, grouped by step in step order; within a step, in schedule order, which both ends of
	// a pair share, so MPI's non-overtaking rule matches several messages between the same ranks in order.
	std::vector<const Transfer*> mine;
	for (const Transfer& transfer : schedule.transfers)
		if (transfer.from == rank || transfer.to == rank)
			mine.push_back(&transfer);
	std::stable_sort(mine.begin(), mine.end(),
			 [](const Transfer* a, const Transfer* b) { return a->step < b->step; });
	DirectPeers direct;
	if (const int rc = direct.setUp(comm, rank, local, old_buffer, new_buffer, isContiguous(element, extent), extent,
					schedule);
	    rc != MPI_SUCCESS) {
		result.mpiError = rc;
		return done();
	}
	if (options.prefaultNewBuffer)
		prefault(mine, rank, old_buffer, new_buffer, extent, options.deferLocal, direct);
	StepRunner runner(comm, rank, options, element, extent, direct, result);
	for (std::size_t first = 0; first < mine.size();) {
		std::size_t last = first;
		while (last < mine.size() && mine[last]->step == mine[first]->step)
			++last;
		runner.run({mine.begin() + static_cast<std::ptrdiff_t>(first),
			    mine.begin() + static_cast<std::ptrdiff_t>(last)},
			   old_buffer, new_buffer);
		first = last;
	}
	return done();
}

std::int64_t finishLocal(const Schedule& schedule, int rank, void* old_buffer, void* new_buffer,
			 std::size_t element_bytes)
{
	std::int64_t moved = 0;
	for (const Transfer& transfer : schedule.transfers)
		if (transfer.from == rank && transfer.to == rank)
			copyLocally(transfer, static_cast<char*>(old_buffer), static_cast<char*>(new_buffer), element_bytes,
				    [&](char* place, char* bytes, std::size_t length) {
					    moved += static_cast<std::int64_t>(moveOrCopy(place, bytes, length));
				    });
	return moved;
}

}  // namespace malleo::pcm
