// SPDX-License-Identifier: Apache-2.0
// Redistribution throughput of the pcm_bridge executor next to memcpy bandwidth, in one run on one machine.
//
// For each scenario (old ranks -> new ranks, the data evenly spread in 1D blocks, as heat2d's columns, over ranks
// 0..k-1 before and over the new ranks in the order the bridge gives them after: --placement) and each array size, the
// schedule runs `repeats` times on a communicator of the ranks the scenario uses (the others park); a run's time is the
// slowest rank's, from a common barrier. memcpy bandwidth is measured by rank 0 copying the whole array while every
// other rank waits without spinning (MPI_Ibarrier + MPI_Test + 1 ms sleep): between two touched buffers after each run
// (the second of two copies in a row), and, after the runs, into a buffer allocated just before the copy as the
// session allocates a reconfiguration's new buffer (`fresh`, allocateBlock) and, as the executor does with --prefault
// on, faulted in with one madvise, so that it pays the first touch of its pages as that buffer does.
// By default the executor's buffers are touched before timing, so neither side pays first-touch page faults
// (`--new-buffer session`: the new ones are fresh). Medians over the repeats.
//
//	mpirun -n 4 build/bench/pcm_redistribution_openmpi [--sizes-mb 10,100,300] [--scenarios 1:2,2:4,4:2]
//	    [--repeats 5] [--column-doubles 1024] [--distribution block1d|block_cyclic1d] [--block 8]
//	    [--huge-pages none|old|new|all] [--new-buffer touched|session|calloc|calloc-advised|huge|huge-zeroed]
//	    [--prefault on|off]
//	    [--chunk-mb 0] [--method executor|shm|shared] [--kept copied|as-session] [--placement cpp|c|identity]
//
// Options:
//   --sizes-mb        array sizes in MiB
//   --scenarios       old:new rank counts; the world must hold the larger of the two
//   --repeats         timed runs per scenario and size (the 300 MiB case runs max(3, repeats / 2))
//   --column-doubles  doubles per element (a heat2d column); the element is one contiguous MPI type
//   --distribution    block1d (the default) or block_cyclic1d (many segments per transfer)
//   --block           elements per block for block_cyclic1d
//   --huge-pages      which buffers are 2 MiB aligned and madvise(MADV_HUGEPAGE)d before their first touch, for
//                     transparent huge pages in "madvise" mode: none, old (the data before), new (after), all (old,
//                     new and the memcpy baseline's)
//   --new-buffer      touched: allocated once, touched before timing (the default); session: allocated anew inside
//                     every timed run as pcm_bridge's session allocates a reconfiguration's new buffers
//                     (allocateBlock: on a page, untouched), so the run pays the first touch of its pages; calloc:
//                     the same with std::calloc (the session's way until 2026-11-24; a block calloc takes from the
//                     heap, as it does once frees have raised glibc's mmap threshold, is zeroed inside the run and
//                     does not start on a page, so kept elements are copied, not moved);
//                     huge: the same 2 MiB aligned and madvise(MADV_HUGEPAGE)d, not zeroed; huge-zeroed: and zeroed;
//                     calloc-advised: calloc, then madvise(MADV_HUGEPAGE) on the 2 MiB aligned pages inside it
//   --prefault        on (the default, as in the bridge): the executor faults the pages of the new buffer in with
//                     one madvise(MADV_POPULATE_WRITE) before the transfers; off: they fault during the copies
//   --chunk-mb        cut every transfer between ranks into messages of at most this many MiB (0: whole)
//   --method          executor (the bridge's) or shm: the bandwidth experiment's same-node alternative, a pipeline
//                     through an MPI shared-memory window (sender copies a chunk in, receiver copies it out),
//                     block1d only (docs/performance.md, "Redistribution"); or shared, the bridge's shared blocks
//                     (the default since 2026-11-26; pcm_bridge/src/memory/shared_pages.h): the old blocks and
//                     each run's fresh new blocks are shared blocks placed by the global index of their first
//                     element (block1d; on a page otherwise), and each run takes pages over (takePages) before the
//                     executor copies the rest and the elements a rank keeps are taken as pages too; --new-buffer,
//                     --huge-pages and --kept do not apply, and what was taken is handed back after each run,
//                     outside the timing
//   --kept            copied (the default): every rank copies the elements it keeps into its new buffer; as-session:
//                     as the bridge's session does for the C++ API, a rank whose new elements are the first it holds
//                     keeps them in its old buffer (no new buffer, nothing copied), and the others move the pages of
//                     what they keep into the new buffer once the transfers are done (finishLocal; page_move.h: into
//                     a new buffer that is already touched they are copied, as moveOrCopy does). The old buffers are
//                     filled again between runs, outside the timing
//   --placement       which process takes which new slot. cpp (the default): as the bridge plans it for the C++ API
//                     (pcm_bridge/src/plan/plan.h), a split's joiners after the processes whose blocks they share (2 -> 4:
//                     ranks 0, 2, 1, 3) and a merge keeping the first process of each group of slots (4 -> 2: ranks
//                     0 and 2); c: as for the PCM C API, the same splits, and a merge keeping the first slots;
//                     identity: new slot i is rank i (this benchmark's layout before 2026-11-25, which moves three
//                     quarters of the array in 2 -> 4 and 4 -> 2 where the bridge moves half)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "executor/executor.h"
#include "executor/page_adoption.h"
#include "memory/page_move.h"
#include "plan/plan.h"

using namespace malleo::pcm;

namespace {

double median(std::vector<double> values)
{
	std::sort(values.begin(), values.end());
	std::size_t n = values.size();
	return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Waits for the other ranks without taking CPU from the one that measures.
void parkedBarrier(MPI_Comm comm)
{
	MPI_Request request;
	MPI_Ibarrier(comm, &request);
	int done = 0;
	while (!done) {
		MPI_Test(&request, &done, MPI_STATUS_IGNORE);
		if (!done)
			usleep(1000);
	}
}

// `elements` spread evenly over the processes of `ranks`, in slot order.
Layout evenLayout(Distribution distribution, const std::vector<int>& ranks, std::int64_t elements, std::int64_t block)
{
	Layout layout;
	layout.distribution = distribution;
	layout.globalCount = elements;
	layout.block = block;
	layout.ranks = ranks;
	const auto parts = static_cast<std::int64_t>(ranks.size());
	for (std::int64_t p = 0; p < parts; ++p)
		layout.counts.push_back(elements / parts + (p < elements % parts ? 1 : 0));
	return layout;
}

enum class SlotPlacement { cpp, c, identity };

// Ranks 0..n-1.
std::vector<int> firstRanks(int n)
{
	std::vector<int> ranks;
	for (int r = 0; r < n; ++r)
		ranks.push_back(r);
	return ranks;
}

// The ranks in the new slots when `old_ranks` processes (ranks 0..old_ranks-1) become `new_ranks`: planned by the
// bridge's own rules (makePlan) on a world whose other ranks are spare, or slot i = rank i.
std::vector<int> newSlots(int old_ranks, int new_ranks, SlotPlacement placement)
{
	if (placement == SlotPlacement::identity || old_ranks == new_ranks)
		return firstRanks(new_ranks);
	const int world = std::max(old_ranks, new_ranks);
	Membership membership;
	membership.reusable = placement == SlotPlacement::cpp;
	membership.state.assign(static_cast<std::size_t>(world), ProcessState::Spare);
	membership.node.assign(static_cast<std::size_t>(world), "");
	for (int r = 0; r < old_ranks; ++r) {
		membership.active.push_back(r);
		membership.state[static_cast<std::size_t>(r)] = ProcessState::Active;
	}
	Command command;
	command.op = new_ranks > old_ranks ? Operation::split : Operation::merge;
	command.count = std::abs(new_ranks - old_ranks);
	Plan plan;
	const std::string why = makePlan(command, membership, plan);
	if (!why.empty()) {
		std::fprintf(stderr, "pcm_redistribution: %s\n", why.c_str());
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return plan.after;
}

// The slot of `rank` in a layout, or -1 when it has none.
int slotOf(const Layout& layout, int rank)
{
	auto at = std::find(layout.ranks.begin(), layout.ranks.end(), rank);
	return at == layout.ranks.end() ? -1 : static_cast<int>(at - layout.ranks.begin());
}

// A buffer whose pages are touched before any timing; with huge pages, aligned so that the kernel can back it with
// 2 MiB pages.
class Buffer
{
public:
	// `shared_lead` >= 0: a shared block of the bridge's, starting that many bytes into a page (--method shared).
	Buffer(std::size_t bytes, bool huge, char fill, std::int64_t shared_lead = -1) : bytes_(bytes)
	{
		if (bytes == 0)
			return;
		if (shared_lead >= 0) {
			data_ = static_cast<char*>(allocateShared(bytes, static_cast<std::size_t>(shared_lead)));
			shared_ = true;
			if (!data_) {
				std::fprintf(stderr, "pcm_redistribution: no shared block of %zu bytes\n", bytes);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			if (fill)  // a new block reads zeros, and its pages are left for the run to take over
				std::memset(data_, fill, bytes);
			return;
		}
		constexpr std::size_t kHuge = 2u << 20;
		const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
		// On a page, as the session's buffers are (allocateBlock), so that kept elements can move by pages.
		data_ = static_cast<char*>(huge ? std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge)
					       : std::aligned_alloc(page, (bytes + page - 1) / page * page));
		if (!data_) {
			std::fprintf(stderr, "pcm_redistribution: out of memory for %zu bytes\n", bytes);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (huge)
			madvise(data_, (bytes + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);
		std::memset(data_, fill, bytes);
	}
	Buffer(const Buffer&) = delete;
	Buffer& operator=(const Buffer&) = delete;
	~Buffer()
	{
		if (!shared_ || !releaseShared(data_))
			std::free(data_);
	}
	char* data() const { return data_; }
	// Frees the buffer and allocates it again without touching it (but for huge-zeroed's memset), as a
	// reconfiguration's new buffer is: `how` is one of --new-buffer's values other than touched.
	void renew(const std::string& how)
	{
		if (bytes_ == 0)
			return;
		std::free(data_);
		constexpr std::size_t kHuge = 2u << 20;
		const std::size_t rounded = (bytes_ + kHuge - 1) / kHuge * kHuge;
		const bool session = how == "session", zeroed = how == "calloc" || how == "calloc-advised";
		const auto count = static_cast<std::int64_t>(bytes_);
		data_ = static_cast<char*>(session  ? allocateBlock(count, 0, 1, false, Placement::Page)
					   : zeroed ? std::calloc(1, bytes_)
						    : std::aligned_alloc(kHuge, rounded));
		if (!data_) {
			std::fprintf(stderr, "pcm_redistribution: out of memory for %zu bytes\n", bytes_);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (session)
			return;
		if (!zeroed)
			madvise(data_, rounded, MADV_HUGEPAGE);
		const auto first = (reinterpret_cast<std::uintptr_t>(data_) + kHuge - 1) / kHuge * kHuge;
		const auto end = (reinterpret_cast<std::uintptr_t>(data_) + bytes_) / kHuge * kHuge;
		if (how == "calloc-advised" && end > first)
			madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
		if (how == "huge-zeroed")
			std::memset(data_, 0, bytes_);
	}
	std::size_t size() const { return bytes_; }

private:
	char* data_ = nullptr;
	std::size_t bytes_ = 0;
	bool shared_ = false;
};

// The same transfers, those between ranks cut into messages of at most `chunk` elements (same step, in order, so
// MPI's non-overtaking rule pairs them up). Only single-segment transfers are cut (block1d's).
Schedule chunked(const Schedule& plan, std::int64_t chunk)
{
	if (chunk <= 0)
		return plan;
	Schedule cut;
	cut.steps = plan.steps;
	for (const Transfer& transfer : plan.transfers) {
		if (transfer.from == transfer.to || transfer.source.size() != 1 || transfer.destination.size() != 1) {
			cut.transfers.push_back(transfer);
			continue;
		}
		for (std::int64_t done = 0; done < transfer.source[0].count; done += chunk) {
			Transfer piece = transfer;
			const std::int64_t count = std::min(chunk, transfer.source[0].count - done);
			piece.source = {{transfer.source[0].offset + done, count}};
			piece.destination = {{transfer.destination[0].offset + done, count}};
			cut.transfers.push_back(piece);
		}
	}
	return cut;
}

// The shared-memory alternative to the executor, for block1d: every transfer between ranks goes through two slots
// of `chunk` bytes in the sender's part of a shared window. The sender copies a chunk into a free slot and says so
// with a small message; the receiver copies it out into its new buffer and hands the slot back, so both cores copy
// at once. A rank's own part is copied in chunks whenever it has nothing else to do. Ranks poll with sched_yield,
// not to starve a peer on a shared core.
class ShmPipeline
{
public:
	static constexpr int kSlots = 2;

	ShmPipeline(MPI_Comm comm, const Schedule& plan, std::size_t chunk, std::size_t element_bytes)
	    : comm_(comm), plan_(plan), chunk_(chunk), element_bytes_(element_bytes)
	{
		MPI_Comm_rank(comm, &rank_);
		MPI_Comm node;
		MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
		int node_size = 0, size = 0;
		MPI_Comm_size(node, &node_size);
		MPI_Comm_size(comm, &size);
		MPI_Comm_free(&node);
		if (node_size != size) {
			std::fprintf(stderr, "pcm_redistribution: --method shm needs every rank on one node\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		for (const Transfer& t : plan.transfers)
			if (t.source.size() != 1 || t.destination.size() != 1) {
				std::fprintf(stderr, "pcm_redistribution: --method shm handles block1d only\n");
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
		int outgoing = 0;
		for (const Transfer& t : plan.transfers)
			if (t.from == rank_ && t.to != rank_)
				++outgoing;
		char* base = nullptr;
		MPI_Win_allocate_shared(static_cast<MPI_Aint>(outgoing * kSlots * chunk_), 1, MPI_INFO_NULL, comm, &base,
					&window_);
		MPI_Win_lock_all(MPI_MODE_NOCHECK, window_);
	}
	~ShmPipeline()
	{
		MPI_Win_unlock_all(window_);
		MPI_Win_free(&window_);
	}

	void run(const char* old_buffer, char* new_buffer)
	{
		struct Job {
			const Transfer* transfer;
			int index;  // among the sender's transfers to other ranks: names the slots and the tags
			std::size_t bytes, chunks, done = 0;  // done: chunks filled (sender) or drained (receiver)
			int credits = kSlots;
			char* slots = nullptr;
			MPI_Request request = MPI_REQUEST_NULL;
			long signal = 0;
		};
		std::vector<Job> sends, receives, locals;
		// MPI holds pointers into the jobs (their signal words): the vectors must never reallocate.
		sends.reserve(plan_.transfers.size());
		receives.reserve(plan_.transfers.size());
		locals.reserve(plan_.transfers.size());
		std::map<int, int> per_sender;
		for (const Transfer& t : plan_.transfers) {
			const int index = t.from == t.to ? 0 : per_sender[t.from]++;
			if (t.from != rank_ && t.to != rank_)
				continue;
			Job job{&t, index, static_cast<std::size_t>(t.source[0].count) * element_bytes_, 0};
			job.chunks = (job.bytes + chunk_ - 1) / chunk_;
			if (t.from == t.to) {
				locals.push_back(job);
				continue;
			}
			MPI_Aint size = 0;
			int unit = 0;
			char* base = nullptr;
			MPI_Win_shared_query(window_, t.from, &size, &unit, &base);
			job.slots = base + static_cast<std::size_t>(index) * kSlots * chunk_;
			// A sender waits for slots handed back, a receiver for chunks announced.
			const int peer = t.from == rank_ ? t.to : t.from;
			const int tag = t.from == rank_ ? kTagFree + index : kTagFull + index;
			auto& list = t.from == rank_ ? sends : receives;
			list.push_back(job);
			if (job.chunks > 0)
				MPI_Irecv(&list.back().signal, 1, MPI_LONG, peer, tag, comm_, &list.back().request);
		}
		for (bool busy = true; busy;) {
			busy = false;
			bool progress = false;
			for (Job& job : sends) {
				if (job.done == job.chunks)
					continue;
				busy = true;
				int arrived = 0;
				MPI_Test(&job.request, &arrived, MPI_STATUS_IGNORE);
				if (arrived) {
					++job.credits;
					MPI_Irecv(&job.signal, 1, MPI_LONG, job.transfer->to,
						  kTagFree + job.index, comm_, &job.request);
				}
				if (job.credits > 0) {
					const std::size_t offset = job.done * chunk_;
					const std::size_t length = std::min(chunk_, job.bytes - offset);
					std::memcpy(job.slots + (job.done % kSlots) * chunk_,
						    old_buffer + job.transfer->source[0].offset * element_bytes_ + offset,
						    length);
					MPI_Win_sync(window_);
					long chunk = static_cast<long>(job.done);
					MPI_Send(&chunk, 1, MPI_LONG, job.transfer->to,
						 kTagFull + job.index, comm_);
					--job.credits;
					++job.done;
					progress = true;
				}
			}
			for (Job& job : receives) {
				if (job.done == job.chunks)
					continue;
				busy = true;
				int arrived = 0;
				MPI_Test(&job.request, &arrived, MPI_STATUS_IGNORE);
				if (!arrived)
					continue;
				MPI_Win_sync(window_);
				const std::size_t offset = job.done * chunk_;
				const std::size_t length = std::min(chunk_, job.bytes - offset);
				std::memcpy(new_buffer + job.transfer->destination[0].offset * element_bytes_ + offset,
					    job.slots + (job.done % kSlots) * chunk_, length);
				long chunk = static_cast<long>(job.done);
				++job.done;
				// The slot is free again; the sender's last chunk needs no answer.
				if (job.done + kSlots <= job.chunks)
					MPI_Send(&chunk, 1, MPI_LONG, job.transfer->from,
						 kTagFree + job.index, comm_);
				if (job.done < job.chunks)
					MPI_Irecv(&job.signal, 1, MPI_LONG, job.transfer->from,
						  kTagFull + job.index, comm_, &job.request);
				progress = true;
			}
			if (!progress)
				for (Job& job : locals) {
					if (job.done == job.chunks)
						continue;
					const std::size_t offset = job.done * chunk_;
					const std::size_t length = std::min(chunk_, job.bytes - offset);
					std::memcpy(new_buffer + job.transfer->destination[0].offset * element_bytes_ + offset,
						    old_buffer + job.transfer->source[0].offset * element_bytes_ + offset,
						    length);
					++job.done;
					progress = true;
					break;
				}
			for (const Job& job : locals)
				busy = busy || job.done < job.chunks;
			if (busy && !progress)
				sched_yield();
		}
		// A sender whose receiver never needed to hand back a slot still has its credit receive posted.
		for (Job& job : sends)
			if (job.request != MPI_REQUEST_NULL) {
				MPI_Cancel(&job.request);
				MPI_Wait(&job.request, MPI_STATUS_IGNORE);
			}
	}

private:
	static constexpr int kTagFull = 8100, kTagFree = 8200;

	MPI_Comm comm_;
	const Schedule& plan_;
	std::size_t chunk_, element_bytes_;
	int rank_ = 0;
	MPI_Win window_ = MPI_WIN_NULL;
};

struct Options {
	Distribution distribution = Distribution::Block1d;
	std::int64_t block = 8;
	bool huge_old = false, huge_new = false, huge_copy = false;
	double chunk_mb = 0;
	bool shm = false;
	bool shared = false;
	std::string new_buffer = "touched";
	bool prefault = true;
	bool kept_as_session = false;
	SlotPlacement placement = SlotPlacement::cpp;
};

struct Figures {
	double seconds;
	double moved_bytes;  // between different ranks, all ranks together
	double memcpy_seconds;
	double fresh_memcpy_seconds;  // into a buffer allocated just before
};

Figures measure(int old_ranks, int new_ranks, std::int64_t elements, MPI_Datatype element, int element_bytes,
		const Options& options, int repeats, int rank)
{
	Layout from = evenLayout(options.distribution, firstRanks(old_ranks), elements, options.block);
	Layout to = evenLayout(options.distribution, newSlots(old_ranks, new_ranks, options.placement), elements,
			       options.block);
	const auto chunk_bytes = static_cast<std::int64_t>(options.chunk_mb * 1048576.0);
	Schedule plan = options.shm ? schedule(from, to) : chunked(schedule(from, to), chunk_bytes / element_bytes);
	auto bytes = [&](const Layout& layout) {
		const int slot = slotOf(layout, rank);
		return slot >= 0 ? static_cast<std::size_t>(localCount(layout, slot)) * static_cast<std::size_t>(element_bytes)
				 : 0;
	};
	auto firstElement = [&](const Layout& layout) {
		std::int64_t first = 0;
		for (int slot = 0; slot < slotOf(layout, rank); ++slot)
			first += layout.counts[static_cast<std::size_t>(slot)];
		return first;
	};
	// Shared blocks placed as the session places them: by their first element's global index for block1d, on a
	// page otherwise.
	auto lead = [&](const Layout& layout) -> std::int64_t {
		if (!options.shared)
			return -1;
		const bool block1d = options.distribution == Distribution::Block1d;
		return static_cast<std::int64_t>(sharedLead(block1d ? firstElement(layout) : 0, 0, element_bytes));
	};
	Buffer old_buffer(bytes(from), options.huge_old, 1, lead(from));
	Buffer new_buffer(options.shared ? 0 : bytes(to), options.huge_new, 0);  // shared: one per run
	// block1d: each element's bytes say its global index, so the result can be checked after the last run (the
	// executor's correctness is tested elsewhere; this guards the experimental variants). The new buffer is cleared
	// or allocated afresh before that run; only --new-buffer huge and session may get back a block still holding old
	// results.
	const bool checkable = options.distribution == Distribution::Block1d;
	auto pattern = [](std::int64_t global) { return static_cast<char>(global % 251 + 1); };
	auto fillOld = [&] {
		for (std::size_t k = 0; k < old_buffer.size() / static_cast<std::size_t>(element_bytes); ++k)
			std::memset(old_buffer.data() + k * static_cast<std::size_t>(element_bytes),
				    pattern(firstElement(from) + static_cast<std::int64_t>(k)),
				    static_cast<std::size_t>(element_bytes));
	};
	if (checkable)
		fillOld();
	// --kept as-session: this rank's new buffer is its old one when it keeps the start of its block and gets
	// nothing else.
	const bool in_place = options.kept_as_session && old_buffer.size() && new_buffer.size() && keepsInPlace(plan, rank);
	Buffer& target = in_place ? old_buffer : new_buffer;
	std::size_t array_bytes = static_cast<std::size_t>(elements) * static_cast<std::size_t>(element_bytes);
	Buffer copy_from(rank == 0 ? array_bytes : 0, options.huge_copy, 1);
	Buffer copy_to(rank == 0 ? array_bytes : 0, options.huge_copy, 0);

	// Only the ranks of the scenario take part (a 1 -> 2 run is a two-process job); the others park.
	MPI_Comm comm = MPI_COMM_NULL;
	MPI_Comm_split(MPI_COMM_WORLD, rank < std::max(old_ranks, new_ranks) ? 0 : MPI_UNDEFINED, rank, &comm);
	if (comm != MPI_COMM_NULL)
		MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);  // execute() runs on it
	std::unique_ptr<ShmPipeline> pipeline;
	if (options.shm && comm != MPI_COMM_NULL)
		pipeline = std::make_unique<ShmPipeline>(comm, plan, static_cast<std::size_t>(chunk_bytes),
							 static_cast<std::size_t>(element_bytes));
	// --method shared: the last run's new block and what it took, handed back before the next run (not kept, so
	// the old blocks keep their pages) and after the check.
	std::unique_ptr<Buffer> shared_new;
	std::unique_ptr<TakenPages> taken;
	std::vector<double> times, copies, fresh_copies;
	double moved = 0;
	for (int r = 0; r < repeats + 1; ++r) {	 // the first run warms up and is not counted
		if (comm != MPI_COMM_NULL) {
			if (r == repeats && new_buffer.size() && !in_place)
				std::memset(new_buffer.data(), 0, new_buffer.size());
			shared_new.reset();
			taken.reset();
			MPI_Barrier(comm);
			double start = MPI_Wtime();
			if (options.new_buffer != "touched" && !in_place)
				new_buffer.renew(options.new_buffer);
			ExecuteResult result;
			if (options.shared) {
				// As the session does for a C++ API buffer with MALLEO_PCM_SHARED_PAGES=on.
				shared_new = std::make_unique<Buffer>(bytes(to), false, 0, lead(to));
				taken = std::make_unique<TakenPages>();
				Schedule rest;
				const auto size = static_cast<std::size_t>(element_bytes);
				result.mpiError = takePages(comm, rank, plan, old_buffer.data(),
							     static_cast<std::int64_t>(old_buffer.size() / size),
							     shared_new->data(),
							     static_cast<std::int64_t>(shared_new->size() / size), size, *taken,
							     rest);
				ExecuteOptions execute_options;
				execute_options.deferLocal = true;
				const ExecuteResult copied =
				    execute(comm, rest, old_buffer.data(), shared_new->data(), element, execute_options);
				result.bytesSent = copied.bytesSent;
				if (result.mpiError == MPI_SUCCESS)
					result.mpiError = copied.mpiError;
				if (result.mpiError == MPI_SUCCESS)
					finishLocal(rest, rank, old_buffer.data(), shared_new->data(), size);
			} else if (pipeline) {
				pipeline->run(old_buffer.data(), new_buffer.data());
				for (const Transfer& t : plan.transfers)
					if (t.from == rank && t.to != rank)
						result.bytesSent += t.source[0].count * element_bytes;
			} else {
				ExecuteOptions execute_options;
				execute_options.prefaultNewBuffer = options.prefault;
				execute_options.deferLocal = options.kept_as_session;
				result = execute(comm, plan, old_buffer.data(), target.data(), element, execute_options);
				// Every rank knows the transfers succeeded once the allreduce below says so; the session
				// finishes the local part after its own agreement, this one at once (same work).
				if (options.kept_as_session && result.mpiError == MPI_SUCCESS)
					finishLocal(plan, rank, old_buffer.data(), target.data(),
						    static_cast<std::size_t>(element_bytes));
			}
			double elapsed = MPI_Wtime() - start, slowest = 0;
			MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
			double sent = static_cast<double>(result.bytesSent), all_sent = 0;
			MPI_Allreduce(&sent, &all_sent, 1, MPI_DOUBLE, MPI_SUM, comm);
			int error = result.mpiError, any_error = 0;
			MPI_Allreduce(&error, &any_error, 1, MPI_INT, MPI_MAX, comm);
			if (any_error != MPI_SUCCESS) {
				if (rank == 0)
					std::fprintf(stderr, "pcm_redistribution: execute failed with MPI error %d\n",
						     any_error);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			if (r > 0)
				times.push_back(slowest);
			moved = all_sent;
			if (options.kept_as_session && !in_place && r < repeats)
				fillOld();  // pages moved out of it read zeros now
		}
		parkedBarrier(MPI_COMM_WORLD);
		if (rank == 0) {
			// Twice, the second timed: on a VM with shadow page tables the first access to memory after the
			// process unmapped some (the run's freed buffers) can run several times slower (docs/performance.md,
			// "Machines"); the baseline is what memcpy reaches between touched buffers.
			std::memcpy(copy_to.data(), copy_from.data(), array_bytes);
			const double copy_start = MPI_Wtime();
			std::memcpy(copy_to.data(), copy_from.data(), array_bytes);
			if (r > 0)
				copies.push_back(MPI_Wtime() - copy_start);
		}
		parkedBarrier(MPI_COMM_WORLD);
	}
	// After the runs, so that its buffers' unmapping does not slow the runs (as above).
	for (int r = 0; r < repeats && rank == 0; ++r) {
		const double copy_start = MPI_Wtime();
		// Allocated as the session allocates a new buffer (on a page: fresh pages from the kernel each time, where a
		// plain malloc of up to 32 MiB gets back warm pages once frees have raised glibc's mmap threshold).
		const auto count = static_cast<std::int64_t>(array_bytes);
		auto* fresh = static_cast<char*>(allocateBlock(count, 0, 1, false, Placement::Page));
		if (!fresh) {
			std::fprintf(stderr, "pcm_redistribution: out of memory for %zu bytes\n", array_bytes);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		// Faulted in with one madvise first when the executor does so (--prefault).
		if (options.prefault)
			populatePages(fresh, array_bytes);
		std::memcpy(fresh, copy_from.data(), array_bytes);
		fresh_copies.push_back(MPI_Wtime() - copy_start);
		// Read back, so the copy cannot be optimised away.
		if (fresh[array_bytes / 2] != copy_from.data()[array_bytes / 2])
			MPI_Abort(MPI_COMM_WORLD, 1);
		std::free(fresh);
	}
	parkedBarrier(MPI_COMM_WORLD);
	pipeline.reset();
	if (checkable && comm != MPI_COMM_NULL) {
		const auto size = static_cast<std::size_t>(element_bytes);
		const char* result = shared_new ? shared_new->data() : target.data();
		for (std::size_t k = 0; k < bytes(to) / size; ++k) {
			const char expected = pattern(firstElement(to) + static_cast<std::int64_t>(k));
			const char* element = result + k * size;
			if (element[0] != expected || element[size / 2] != expected || element[size - 1] != expected) {
				std::fprintf(stderr, "pcm_redistribution: rank %d: element %zu of the new buffer is wrong\n",
					     rank, k);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		}
	}
	// Every rank has checked before any releases its old block: with --method shared, an old block not kept
	// (taken) by the last run still owns the pages the others' new blocks map, and punches them when released.
	parkedBarrier(MPI_COMM_WORLD);
	shared_new.reset();
	taken.reset();
	if (comm != MPI_COMM_NULL)
		MPI_Comm_free(&comm);
	return {times.empty() ? 0 : median(times), moved, copies.empty() ? 0 : median(copies),
		fresh_copies.empty() ? 0 : median(fresh_copies)};
}

std::vector<std::string> split(const std::string& text, char separator)
{
	std::vector<std::string> parts;
	std::size_t start = 0;
	for (std::size_t end; (end = text.find(separator, start)) != std::string::npos; start = end + 1)
		parts.push_back(text.substr(start, end - start));
	parts.push_back(text.substr(start));
	return parts;
}

}  // namespace

int main(int argc, char** argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, world = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world);

	CLI::App app{"Redistribution throughput of the pcm_bridge executor next to memcpy bandwidth"};
	std::string sizes_text = "10,100,300", scenarios_text = "1:2,2:4,4:2", distribution_text = "block1d";
	int repeats = 5, column_doubles = 1024;
	std::int64_t block = 8;
	app.add_option("--sizes-mb", sizes_text, "array sizes in MiB, comma-separated");
	app.add_option("--scenarios", scenarios_text, "old:new rank counts, comma-separated");
	app.add_option("--repeats", repeats, "timed runs per scenario and size")->check(CLI::Range(1, 1000));
	app.add_option("--column-doubles", column_doubles, "doubles per element")->check(CLI::Range(1, 1 << 20));
	app.add_option("--distribution", distribution_text, "block1d or block_cyclic1d")
	    ->check(CLI::IsMember({"block1d", "block_cyclic1d"}));
	app.add_option("--block", block, "elements per block (block_cyclic1d)")->check(CLI::Range(1, 1 << 30));
	Options options;
	std::string method = "executor";
	std::string huge = "none";
	app.add_option("--huge-pages", huge, "buffers given madvise(MADV_HUGEPAGE): none, old, new or all")
	    ->check(CLI::IsMember({"none", "old", "new", "all"}));
	app.add_option("--chunk-mb", options.chunk_mb, "cut transfers between ranks into messages of this many MiB")
	    ->check(CLI::Range(0.0, 1e6));
	app.add_option("--new-buffer", options.new_buffer, "touched, session, calloc, calloc-advised, huge or huge-zeroed")
	    ->check(CLI::IsMember({"touched", "session", "calloc", "calloc-advised", "huge", "huge-zeroed"}));
	app.add_option("--method", method,
		       "executor, shm (shared-memory pipeline, block1d) or shared (the bridge's shared blocks, pages "
		       "taken over)")
	    ->check(CLI::IsMember({"executor", "shm", "shared"}));
	std::string prefault = "on";
	app.add_option("--prefault", prefault, "on (the bridge's way) or off: the executor faults the new buffer in first")
	    ->check(CLI::IsMember({"on", "off"}));
	std::string kept = "copied";
	app.add_option("--kept", kept, "copied, or as-session: kept elements stay in place or move by pages")
	    ->check(CLI::IsMember({"copied", "as-session"}));
	std::string placement = "cpp";
	app.add_option("--placement", placement, "cpp, c (the bridge's slots for either API) or identity (slot i = rank i)")
	    ->check(CLI::IsMember({"cpp", "c", "identity"}));
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError& e) {
		int code = rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
		MPI_Finalize();
		return code;
	}
	options.distribution =
	    distribution_text == "block1d" ? Distribution::Block1d : Distribution::BlockCyclic1d;
	options.block = block;
	options.shm = method == "shm";
	options.shared = method == "shared";
	options.prefault = prefault == "on";
	options.kept_as_session = kept == "as-session";
	options.placement = placement == "cpp" ? SlotPlacement::cpp
			    : placement == "c" ? SlotPlacement::c
					       : SlotPlacement::identity;
	options.huge_old = huge == "old" || huge == "all";
	options.huge_new = huge == "new" || huge == "all";
	options.huge_copy = huge == "all";
	if (options.shm && (options.distribution != Distribution::Block1d || options.chunk_mb <= 0)) {
		if (rank == 0)
			std::fprintf(stderr, "pcm_redistribution: --method shm needs --distribution block1d and --chunk-mb\n");
		MPI_Finalize();
		return 2;
	}

	std::vector<std::pair<int, int>> scenarios;
	std::vector<double> sizes;
	try {
		for (const std::string& s : split(scenarios_text, ',')) {
			auto pair = split(s, ':');
			if (pair.size() != 2)
				throw std::invalid_argument(s);
			scenarios.push_back({std::stoi(pair[0]), std::stoi(pair[1])});
			if (scenarios.back().first < 1 || scenarios.back().second < 1 ||
			    std::max(scenarios.back().first, scenarios.back().second) > world)
				throw std::invalid_argument(s + " (the world has " + std::to_string(world) + " ranks)");
		}
		for (const std::string& s : split(sizes_text, ','))
			sizes.push_back(std::stod(s));
	} catch (const std::exception& e) {
		if (rank == 0)
			std::fprintf(stderr, "pcm_redistribution: bad --scenarios or --sizes-mb entry: %s\n", e.what());
		MPI_Finalize();
		return 2;
	}

	MPI_Datatype column;
	MPI_Type_contiguous(column_doubles, MPI_DOUBLE, &column);
	MPI_Type_commit(&column);
	int element_bytes = column_doubles * 8;
	if (rank == 0)
		std::printf(
		    "%d ranks, %s, elements of %d bytes, median of %d runs; %s, huge pages %s, new buffer %s, prefault %s, "
		    "chunks %g MiB, kept %s, placement %s\n\n"
		    "| scenario | array MiB | median s | array GB/s | moved GB/s | memcpy GB/s | array / memcpy | fresh memcpy GB/s | "
		    "array / fresh memcpy |\n"
		    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
		    world, distribution_text.c_str(), element_bytes, repeats, method.c_str(), huge.c_str(), options.new_buffer.c_str(),
		    prefault.c_str(), options.chunk_mb, kept.c_str(), placement.c_str());
	for (double mb : sizes) {
		auto elements = static_cast<std::int64_t>(mb * 1048576.0 / element_bytes);
		int runs = mb >= 300 ? std::max(3, repeats / 2) : repeats;
		for (auto [from, to] : scenarios) {
			Figures f = measure(from, to, elements, column, element_bytes, options, runs, rank);
			if (rank != 0)
				continue;
			double array = static_cast<double>(elements) * element_bytes;
			double memcpy_rate = array / f.memcpy_seconds / 1e9;
			double fresh_rate = array / f.fresh_memcpy_seconds / 1e9;
			std::printf("| %d → %d | %.0f | %.4f | %.2f | %.2f | %.2f | %.0f %% | %.2f | %.0f %% |\n", from, to, mb,
				    f.seconds, array / f.seconds / 1e9, f.moved_bytes / f.seconds / 1e9, memcpy_rate,
				    100.0 * (array / f.seconds / 1e9) / memcpy_rate, fresh_rate,
				    100.0 * (array / f.seconds / 1e9) / fresh_rate);
			std::fflush(stdout);
		}
	}
	MPI_Type_free(&column);
	MPI_Finalize();
	return 0;
}
