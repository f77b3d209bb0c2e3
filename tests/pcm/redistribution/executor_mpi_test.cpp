// SPDX-License-Identifier: Apache-2.0
// The executor under a real MPI: every rank builds the same random old and new layouts over random subsets of the
// world (so some ranks hold nothing before or after), fills its old buffer with a function of each element's
// global index, runs the schedule, and checks its new buffer bit for bit against the test's own reading of the new
// layout, and that its old buffer is untouched. Element types are contiguous (1-3 words) or strided with gaps,
// whose bytes must stay as they were. Bad schedules must fail on every rank at once, without hanging.
//
// Transfers of contiguous elements between processes on one host are copied straight between the processes' memories
// (ExecuteResult::bytes_direct, summed over the ranks): all of them when run as root. With --spawn N (Open MPI) the
// launched ranks spawn N more processes of this program and everything runs on the communicator of both jobs, where
// the transfers between the jobs must be direct for any user.
//
// A merge onto two ranks of blocks from every rank must be balanced: every rank copies about the same, senders
// sharing with the survivors what they would otherwise copy all alone (bytes_direct per rank, runBalanced).
//
// With --expect-page-moves, mremap must move pages in this MPI's processes (page_move.h: Open MPI; Debian's MPICH
// loads UCX, whose hooks break it, and then kept elements are copied).
//
// Usage: executor_mpi_test [--seed N] [--rounds N] [--spawn N] [--expect-page-moves]; exit 0 when every check
// passed on every rank.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "executor/executor.h"
#include "memory/page_move.h"
#include "simulated_ranks.h"

using namespace malleo::pcm;

namespace {

constexpr std::uint64_t kUntouched = 0xdeadbeefcafef00dULL;

// The communicator the test runs on: MPI_COMM_WORLD, or with --spawn the launched and the spawned processes, the
// launched ones (`launched` of them) first. It returns errors, as execute() needs.
MPI_Comm gComm = MPI_COMM_WORLD;
int gLaunched = 0;

bool sameJob(int a, int b)
{
	return (a < gLaunched) == (b < gLaunched);
}

std::uint64_t valueOf(std::int64_t global, int word)
{
	// splitmix64 of (index, word): every word of every element differs.
	std::uint64_t z =
	    static_cast<std::uint64_t>(global) * 4 + static_cast<std::uint64_t>(word) + 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// An element of `words` uint64 values; strided elements leave a gap word after each value.
struct ElementType {
	MPI_Datatype type = MPI_DATATYPE_NULL;
	int words = 1;
	int stride = 1;	 // uint64 words between values within an element
	int span = 1;	 // uint64 words one element occupies in a buffer

	ElementType(int value_words, bool strided) : words(value_words), stride(strided ? 2 : 1)
	{
		span = words * stride;
		if (!strided) {
			MPI_Type_contiguous(words, MPI_UINT64_T, &type);
		} else {
			MPI_Datatype vector;
			MPI_Type_vector(words, 1, 2, MPI_UINT64_T, &vector);
			MPI_Type_create_resized(vector, 0, static_cast<MPI_Aint>(span * 8), &type);
			MPI_Type_free(&vector);
		}
		MPI_Type_commit(&type);
	}
	~ElementType() { MPI_Type_free(&type); }
	ElementType(const ElementType&) = delete;
	ElementType& operator=(const ElementType&) = delete;
};

class Checker
{
public:
	Checker(int rank) : rank_(rank) {}

	void fail(const std::string& what)
	{
		if (failures_++ < 5)
			std::fprintf(stderr, "rank %d: %s\n", rank_, what.c_str());
	}
	int failures() const { return failures_; }

private:
	int rank_;
	int failures_ = 0;
};

int slotOf(const Layout& layout, int rank)
{
	auto found = std::find(layout.ranks.begin(), layout.ranks.end(), rank);
	return found == layout.ranks.end() ? -1 : static_cast<int>(found - layout.ranks.begin());
}

class Round
{
public:
	Round(std::mt19937_64& random, int world) : random_(random), world_(world) {}

	int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }

	std::vector<int> ranks(int count)
	{
		std::vector<int> all(static_cast<std::size_t>(world_));
		std::iota(all.begin(), all.end(), 0);
		std::shuffle(all.begin(), all.end(), random_);
		all.resize(static_cast<std::size_t>(count));
		return all;
	}

	std::vector<std::int64_t> counts(std::int64_t total, std::size_t parts)
	{
		std::vector<std::int64_t> cuts{0, total};
		for (std::size_t k = 1; k < parts; ++k)
			cuts.push_back(std::uniform_int_distribution<std::int64_t>(0, total)(random_));
		std::sort(cuts.begin(), cuts.end());
		std::vector<std::int64_t> result;
		for (std::size_t k = 1; k < cuts.size(); ++k)
			result.push_back(cuts[k] - cuts[k - 1]);
		return result;
	}

	std::int64_t size()
	{
		// Mostly small, sometimes large enough for the MPIs' rendezvous protocols.
		return uniform(0, 5) == 0 ? uniform(50000, 200000) : uniform(0, 3000);
	}

	Layout layout(Distribution distribution, std::int64_t total, std::int64_t rows, std::int64_t cols)
	{
		Layout l;
		l.distribution = distribution;
		if (distribution == Distribution::BlockCyclic2d) {
			int slots = uniform(1, world_);
			std::vector<int> divisors;
			for (int d = 1; d <= slots; ++d)
				if (slots % d == 0)
					divisors.push_back(d);
			l.prow = divisors[static_cast<std::size_t>(uniform(0, static_cast<int>(divisors.size()) - 1))];
			l.pcol = slots / l.prow;
			l.rows = rows;
			l.cols = cols;
			l.blockRows = uniform(1, 20);
			l.blockCols = uniform(1, 20);
			l.ranks = ranks(slots);
			return l;
		}
		l.ranks = ranks(uniform(1, world_));
		l.globalCount = total;
		if (distribution == Distribution::BlockCyclic1d)
			l.block = uniform(1, 3) == 1 ? uniform(1, 4) : uniform(1, 500);
		else
			l.counts = counts(total, l.ranks.size());
		return l;
	}

private:
	std::mt19937_64& random_;
	int world_;
};

void fill(std::vector<std::uint64_t>& buffer, const std::vector<std::int64_t>& globals, const ElementType& element)
{
	buffer.assign(globals.size() * static_cast<std::size_t>(element.span), kUntouched);
	for (std::size_t k = 0; k < globals.size(); ++k)
		for (int w = 0; w < element.words; ++w)
			buffer[k * static_cast<std::size_t>(element.span) +
			       static_cast<std::size_t>(w * element.stride)] = valueOf(globals[k], w);
}

void runDistribution(Distribution distribution, Round& round, int rank, Checker& check)
{
	std::int64_t rows = round.uniform(0, 120), cols = round.uniform(0, 120);
	std::int64_t total = distribution == Distribution::BlockCyclic2d ? rows * cols : round.size();
	Layout from = round.layout(distribution, total, rows, cols);
	Layout to = round.layout(distribution, total, rows, cols);
	if (distribution == Distribution::BlockCyclic1d && round.uniform(0, 1))
		to.block = from.block;
	ElementType element(round.uniform(1, 3), round.uniform(0, 3) == 0);

	Schedule plan = schedule(from, to);
	int old_slot = slotOf(from, rank), new_slot = slotOf(to, rank);
	std::vector<std::uint64_t> old_buffer, new_buffer;
	if (old_slot >= 0)
		fill(old_buffer, testing::contents(from)[static_cast<std::size_t>(old_slot)], element);
	std::vector<std::uint64_t> old_copy = old_buffer;
	std::size_t new_elements = new_slot >= 0 ? static_cast<std::size_t>(localCount(to, new_slot)) : 0;
	new_buffer.assign(new_elements * static_cast<std::size_t>(element.span), kUntouched);

	// As a reconfiguration may: a rank that keeps only its own elements where they are uses its old buffer as the
	// new one (which must then not change at all), and local copies may wait for finishLocal.
	const bool alias = round.uniform(0, 1) == 1 && keepsInPlace(plan, rank) && new_slot >= 0 && old_slot >= 0;
	ExecuteOptions options;
	options.deferLocal = element.stride == 1 && round.uniform(0, 1) == 1;
	void* old_data = old_buffer.empty() ? nullptr : old_buffer.data();
	void* new_data = alias ? old_data : new_buffer.empty() ? nullptr : new_buffer.data();
	ExecuteResult result = execute(gComm, plan, old_data, new_data, element.type, options);
	// finishLocal may move pages out of the old buffer (it is discarded after a success): check it before.
	const bool old_changed = old_buffer != old_copy;
	if (options.deferLocal && result.mpiError == MPI_SUCCESS)
		finishLocal(plan, rank, old_data, new_data, static_cast<std::size_t>(element.span) * 8);
	if (alias)
		new_buffer.assign(old_buffer.begin(), old_buffer.begin() + static_cast<std::ptrdiff_t>(new_buffer.size()));
	// Contiguous elements between two processes on one host (all of this test's) are copied directly
	// (process_vm_readv/writev) where one may access the other's memory, which root always may; between jobs
	// they must be for any user, MPI having no shared memory there. Strided elements never are.
	std::int64_t direct = 0, between_jobs = 0, between_ranks = 0;
	MPI_Allreduce(&result.bytesDirect, &direct, 1, MPI_INT64_T, MPI_SUM, gComm);
	if (element.stride == 1)
		for (const Transfer& transfer : plan.transfers)
			if (transfer.from != transfer.to)
				for (const Segment& segment : transfer.source) {
					between_ranks += segment.count * element.words * 8;
					if (!sameJob(transfer.from, transfer.to))
						between_jobs += segment.count * element.words * 8;
				}
	std::string what = "distribution " + std::to_string(static_cast<int>(distribution)) + ", " +
			   std::to_string(from.ranks.size()) + " -> " + std::to_string(to.ranks.size()) + " slots, " +
			   std::to_string(total) + " elements: ";
	if (result.mpiError != MPI_SUCCESS)
		check.fail(what + "execute returned MPI error " + std::to_string(result.mpiError));
	const std::int64_t at_least = geteuid() == 0 ? between_ranks : between_jobs;
	if (direct < at_least || direct > between_ranks)
		check.fail(what + std::to_string(direct) + " bytes copied directly, expected from " +
			   std::to_string(at_least) + " to " + std::to_string(between_ranks));
	if (old_changed)
		check.fail(what + "the old buffer changed" + (alias ? " (it was the new buffer too)" : ""));

	if (distribution != Distribution::Independent) {
		std::vector<std::uint64_t> expected;
		if (new_slot >= 0)
			fill(expected, testing::contents(to)[static_cast<std::size_t>(new_slot)], element);
		if (new_buffer != expected)
			check.fail(what + "new buffer differs from the new layout");
		return;
	}

	// Independent data may land anywhere: every element must arrive exactly once, whole, on some rank, and each
	// rank must hold its new count. Each rank checks the elements of the global indices it finds by their first
	// word (the old layout says which global index each first word belongs to), then the ranks add up what they
	// saw per index.
	std::vector<std::int64_t> seen(static_cast<std::size_t>(total), 0);
	std::vector<std::pair<std::uint64_t, std::int64_t>> by_first_word;
	by_first_word.reserve(static_cast<std::size_t>(total));
	for (std::int64_t g = 0; g < total; ++g)
		by_first_word.push_back({valueOf(g, 0), g});
	std::sort(by_first_word.begin(), by_first_word.end());
	for (std::size_t k = 0; k < new_elements; ++k) {
		const std::uint64_t* words = new_buffer.data() + k * static_cast<std::size_t>(element.span);
		auto found = std::lower_bound(by_first_word.begin(), by_first_word.end(),
					      std::pair<std::uint64_t, std::int64_t>{words[0], 0});
		if (found == by_first_word.end() || found->first != words[0]) {
			check.fail(what + "element " + std::to_string(k) + " is no element of the array");
			break;
		}
		std::vector<std::uint64_t> one;
		fill(one, {found->second}, element);
		if (!std::equal(one.begin(), one.end(), words)) {
			check.fail(what + "element " + std::to_string(k) + " arrived damaged");
			break;
		}
		++seen[static_cast<std::size_t>(found->second)];
	}
	std::vector<std::int64_t> everywhere(seen.size(), 0);
	MPI_Allreduce(seen.data(), everywhere.data(), static_cast<int>(seen.size()), MPI_INT64_T, MPI_SUM, gComm);
	if (std::any_of(everywhere.begin(), everywhere.end(), [](std::int64_t n) { return n != 1; }))
		check.fail(what + "not every element arrived exactly once");
}

// A schedule naming a rank outside the communicator, and one whose receiver has no buffer: every rank returns an
// error (none hangs waiting for another), no buffer changes, and the communicator still works.
void runBadSchedules(int rank, int world, Checker& check)
{
	std::vector<std::uint64_t> old_buffer(4, 1), new_buffer(4, kUntouched);
	Schedule outside;
	outside.transfers.push_back({0, world, 0, {{0, 4}}, {{0, 4}}});
	ExecuteResult result = execute(gComm, outside, old_buffer.data(), new_buffer.data(), MPI_UINT64_T);
	if (result.mpiError == MPI_SUCCESS)
		check.fail("a transfer to a rank outside the communicator was accepted");

	Schedule missing;
	missing.transfers.push_back({0, world - 1, 0, {{0, 4}}, {{0, 4}}});
	ExecuteResult second = execute(gComm, missing, old_buffer.data(),
				       rank == world - 1 ? nullptr : new_buffer.data(), MPI_UINT64_T);
	if (second.mpiError == MPI_SUCCESS)
		check.fail("a transfer into a missing buffer was accepted");
	if (new_buffer != std::vector<std::uint64_t>(4, kUntouched) || old_buffer != std::vector<std::uint64_t>(4, 1))
		check.fail("a refused schedule changed a buffer");

	// Into a new buffer that is the old one, only elements kept where they are: elements from rank 0 (or, on one
	// rank, moved within it) would overwrite what the old buffer holds.
	Schedule shifted;
	shifted.transfers.push_back({0, world - 1, 0, {{0, 2}}, {{2, 2}}});
	ExecuteResult third = execute(gComm, shifted, old_buffer.data(),
				      rank == world - 1 ? old_buffer.data() : new_buffer.data(), MPI_UINT64_T);
	if (third.mpiError == MPI_SUCCESS)
		check.fail("a transfer into a new buffer that is the old one was accepted");
	if (old_buffer != std::vector<std::uint64_t>(4, 1))
		check.fail("a refused transfer into the old buffer changed it");
	int ranks = 0, one = 1;
	if (MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, gComm) != MPI_SUCCESS || ranks != world)
		check.fail("the communicator no longer works after refused schedules");
}

// block1d layouts of the special cases below: `per_rank` elements on each rank, or all of them on ranks `ranks`.
Layout everyRank(int world, std::int64_t per_rank)
{
	Layout layout;
	for (int r = 0; r < world; ++r) {
		layout.ranks.push_back(r);
		layout.counts.push_back(per_rank);
	}
	layout.globalCount = per_rank * world;
	return layout;
}

Layout onRanks(std::vector<int> ranks, std::vector<std::int64_t> counts)
{
	Layout layout;
	layout.ranks = std::move(ranks);
	layout.counts = std::move(counts);
	layout.globalCount = std::accumulate(layout.counts.begin(), layout.counts.end(), std::int64_t{0});
	return layout;
}

// Rank 0's array spread over every rank into new buffers of at least 8 MiB that were never touched, in the middle
// of larger allocations: the executor faults such destinations in before the transfers (prefault), which must leave
// the bytes around the destination as they were and the data as sent.
void runLargeFreshBuffers(int rank, int world, Checker& check)
{
	constexpr std::int64_t kPerRank = (std::int64_t{9} << 20) / 8 + 5;  // a little over 9 MiB of uint64 per rank
	constexpr std::size_t kGuard = 4096 + 24;  // bytes before and after, not page-aligned
	constexpr unsigned char kSentinel = 0xa5;
	const Layout to = everyRank(world, kPerRank), from = onRanks({0}, {to.globalCount});
	std::vector<std::uint64_t> old_buffer;
	if (rank == 0) {
		old_buffer.resize(static_cast<std::size_t>(from.globalCount));
		for (std::size_t g = 0; g < old_buffer.size(); ++g)
			old_buffer[g] = valueOf(static_cast<std::int64_t>(g), 0);
	}
	const std::size_t bytes = static_cast<std::size_t>(kPerRank) * 8;
	auto* allocation = static_cast<unsigned char*>(std::malloc(kGuard + bytes + kGuard));
	if (!allocation) {
		check.fail("large fresh buffers: out of memory");
		return;
	}
	std::memset(allocation, kSentinel, kGuard);
	std::memset(allocation + kGuard + bytes, kSentinel, kGuard);
	ExecuteResult result = execute(gComm, schedule(from, to), rank == 0 ? old_buffer.data() : nullptr,
				       allocation + kGuard, MPI_UINT64_T);
	if (result.mpiError != MPI_SUCCESS)
		check.fail("large fresh buffers: execute returned MPI error " + std::to_string(result.mpiError));
	for (std::int64_t k = 0; k < kPerRank; ++k) {
		std::uint64_t value;
		std::memcpy(&value, allocation + kGuard + static_cast<std::size_t>(k) * 8, 8);
		if (value != valueOf(rank * kPerRank + k, 0)) {
			check.fail("large fresh buffers: element " + std::to_string(k) + " is wrong");
			break;
		}
	}
	const auto untouched = [&](const unsigned char* guard) {
		return std::all_of(guard, guard + kGuard, [&](unsigned char b) { return b == kSentinel; });
	};
	if (!untouched(allocation) || !untouched(allocation + kGuard + bytes))
		check.fail("large fresh buffers: the bytes around the new buffer changed");
	std::free(allocation);
}

// Every rank's block gathered onto rank 0, which keeps its own 3 MiB by moving their pages (finishLocal after a
// deferred execute): old and new buffers are mappings of their own at the same offset within a page, as two large
// mallocs are. The data must arrive whole, and rank 0's pages must have moved (its old block then reads zeros).
void runPagesMoved(int rank, int world, Checker& check)
{
	constexpr std::int64_t kPerRank = (std::int64_t{3} << 20) / 8 + 3;
	constexpr std::size_t kOffset = 16;
	const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
	const Layout from = everyRank(world, kPerRank), to = onRanks({0}, {from.globalCount});
	const std::size_t old_bytes = static_cast<std::size_t>(kPerRank) * 8 + kOffset;
	const std::size_t new_bytes = rank == 0 ? static_cast<std::size_t>(to.globalCount) * 8 + kOffset : page;
	auto map = [](std::size_t bytes) {
		void* at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return at == MAP_FAILED ? nullptr : static_cast<unsigned char*>(at);
	};
	unsigned char* old_map = map(old_bytes);
	unsigned char* new_map = map(new_bytes);
	if (!old_map || !new_map) {
		check.fail("pages moved: no memory");
		return;
	}
	auto* old_buffer = reinterpret_cast<std::uint64_t*>(old_map + kOffset);
	auto* new_buffer = reinterpret_cast<std::uint64_t*>(new_map + kOffset);
	for (std::int64_t k = 0; k < kPerRank; ++k)
		old_buffer[k] = valueOf(rank * kPerRank + k, 0);
	const Schedule plan = schedule(from, to);
	ExecuteOptions options;
	options.deferLocal = true;
	ExecuteResult result = execute(gComm, plan, old_buffer, rank == 0 ? new_buffer : nullptr, MPI_UINT64_T, options);
	int failed = result.mpiError != MPI_SUCCESS, anyone = 0;
	MPI_Allreduce(&failed, &anyone, 1, MPI_INT, MPI_MAX, gComm);
	if (anyone) {
		check.fail("pages moved: execute returned MPI error " + std::to_string(result.mpiError));
	} else if (rank == 0) {
		const std::int64_t moved = finishLocal(plan, rank, old_buffer, new_buffer, 8);
		// Unless this MPI's memory hooks break mremap (page_move.h): then everything is copied.
		const auto whole_pages =
			pageMovesWork() ? static_cast<std::int64_t>((kPerRank * 8 - (page - kOffset)) / page * page) : 0;
		if (moved != whole_pages)
			check.fail("pages moved: " + std::to_string(moved) + " bytes moved as pages, expected " +
				   std::to_string(whole_pages));
		for (std::int64_t g = 0; g < to.globalCount; ++g)
			if (new_buffer[g] != valueOf(g, 0)) {
				check.fail("pages moved: element " + std::to_string(g) + " is wrong");
				break;
			}
		if (moved > 0 && old_buffer[(page - kOffset) / 8] != 0)
			check.fail("pages moved: the old block still holds its first moved page");
	}
	munmap(old_map, old_bytes);
	munmap(new_map, new_bytes);
}

// Every rank's block merged onto rank 0, whose buffer has room for all of them: its new buffer is its old one, its
// own block stays where it is and the others land past it (ExecuteOptions::held, a C++ API merge's survivor after
// a split). Told it holds more than it does, rank 0's buffer would be overwritten where it holds data: refused
// before anything moves.
void runGrownInPlace(int rank, int world, Checker& check)
{
	constexpr std::int64_t kPerRank = 1000;
	const Layout from = everyRank(world, kPerRank), to = onRanks({0}, {from.globalCount});
	std::vector<std::uint64_t> buffer(static_cast<std::size_t>(rank == 0 ? to.globalCount : kPerRank), kUntouched);
	for (std::int64_t k = 0; k < kPerRank; ++k)
		buffer[static_cast<std::size_t>(k)] = valueOf(rank * kPerRank + k, 0);
	const std::vector<std::uint64_t> before = buffer;
	const Schedule plan = schedule(from, to);
	ExecuteOptions too_much;
	too_much.held = kPerRank + 1;
	ExecuteResult refused = execute(gComm, plan, buffer.data(), rank == 0 ? buffer.data() : nullptr, MPI_UINT64_T,
					too_much);
	if (world > 1 && refused.mpiError == MPI_SUCCESS)
		check.fail("grown in place: transfers over elements the buffer holds were accepted");
	if (buffer != before)
		check.fail("grown in place: a refused schedule changed the buffer");
	ExecuteOptions room;
	room.held = kPerRank;
	ExecuteResult result =
		execute(gComm, plan, buffer.data(), rank == 0 ? buffer.data() : nullptr, MPI_UINT64_T, room);
	if (result.mpiError != MPI_SUCCESS)
		check.fail("grown in place: execute returned MPI error " + std::to_string(result.mpiError));
	if (rank == 0)
		for (std::int64_t g = 0; g < to.globalCount; ++g)
			if (buffer[static_cast<std::size_t>(g)] != valueOf(g, 0)) {
				check.fail("grown in place: element " + std::to_string(g) + " is wrong");
				break;
			}
}

// Ranks 0..w-1 with a block each merged onto ranks 0 and 1 (w >= 3): rank 1 receives from ranks 2.., rank 0 from
// rank 1. Left to the receivers, rank 1 would copy w - 2 blocks and rank 0 one while the other senders idle; the
// executor shares each direct transfer between its ends (DirectPeers) so that every rank copies about the same, the
// w - 1 blocks that change hands over w ranks (ExecuteResult::bytes_direct counts what a rank copied itself).
// Checked as root, where every pair may access each other's memory and so every copy is direct. Blocks of 1 MiB:
// a transfer is shared from 128 KiB on.
void runBalanced(int rank, int world, Checker& check)
{
	if (world < 3)
		return;
	constexpr std::int64_t kPerRank = std::int64_t{1} << 17;
	const Layout from = everyRank(world, kPerRank);
	const Layout to = onRanks({0, 1}, {from.globalCount / 2, from.globalCount - from.globalCount / 2});
	std::vector<std::uint64_t> old_buffer(static_cast<std::size_t>(kPerRank));
	for (std::int64_t k = 0; k < kPerRank; ++k)
		old_buffer[static_cast<std::size_t>(k)] = valueOf(rank * kPerRank + k, 0);
	std::vector<std::uint64_t> new_buffer(rank < 2 ? static_cast<std::size_t>(to.counts[static_cast<std::size_t>(rank)]) : 0);
	const Schedule plan = schedule(from, to);
	ExecuteResult result = execute(gComm, plan, old_buffer.data(), new_buffer.empty() ? nullptr : new_buffer.data(),
				       MPI_UINT64_T);
	const std::int64_t first = rank == 1 ? to.counts[0] : 0;
	for (std::size_t k = 0; k < new_buffer.size(); ++k)
		if (new_buffer[k] != valueOf(first + static_cast<std::int64_t>(k), 0)) {
			check.fail("balanced merge: element " + std::to_string(k) + " is wrong");
			break;
		}
	std::int64_t direct = 0, most = 0, least = 0;
	MPI_Allreduce(&result.bytesDirect, &direct, 1, MPI_INT64_T, MPI_SUM, gComm);
	MPI_Allreduce(&result.bytesDirect, &most, 1, MPI_INT64_T, MPI_MAX, gComm);
	MPI_Allreduce(&result.bytesDirect, &least, 1, MPI_INT64_T, MPI_MIN, gComm);
	if (result.mpiError != MPI_SUCCESS)
		check.fail("balanced merge: execute returned MPI error " + std::to_string(result.mpiError));
	const std::int64_t block = kPerRank * 8;
	std::int64_t between_ranks = 0;
	for (const Transfer& transfer : plan.transfers)
		if (transfer.from != transfer.to)
			for (const Segment& segment : transfer.source)
				between_ranks += segment.count * 8;
	// Within a tenth of a block of the even share: the sharing's passes converge, they do not reach it exactly.
	const std::int64_t even = between_ranks / world, slack = block / 10;
	if (geteuid() == 0 && (direct != between_ranks || most > even + slack || least < even - slack))
		check.fail("balanced merge: " + std::to_string(direct) + " bytes copied directly (expected " +
			   std::to_string(between_ranks) + "), from " + std::to_string(least) + " to " +
			   std::to_string(most) + " by one rank (expected " + std::to_string(even) + " each, give or take " +
			   std::to_string(slack) + ")");
}

// --spawn N: the launched processes start N more of this program (marked --spawned) and all merge into one
// communicator, launched processes first.
void joinSpawned(int argc, char** argv, int spawn, bool spawned)
{
	MPI_Comm inter = MPI_COMM_NULL;
	if (spawned) {
		MPI_Comm_get_parent(&inter);
	} else {
		char exe[4096] = {};
		const auto length = readlink("/proc/self/exe", exe, sizeof exe - 1);
		std::vector<std::string> words(argv + 1, argv + argc);
		words.push_back("--spawned");
		std::vector<char*> args;
		for (auto& word : words)
			args.push_back(word.data());
		args.push_back(nullptr);
		MPI_Comm_spawn(length > 0 ? exe : argv[0], args.data(), spawn, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
			       MPI_ERRCODES_IGNORE);
	}
	MPI_Intercomm_merge(inter, spawned ? 1 : 0, &gComm);
	int remote = 0;
	MPI_Comm_remote_size(inter, &remote);
	MPI_Comm_size(MPI_COMM_WORLD, &gLaunched);
	if (spawned)
		gLaunched = remote;
	MPI_Comm_free(&inter);
}

}  // namespace

int main(int argc, char** argv)
{
	MPI_Init(&argc, &argv);
	std::uint64_t seed = 1;
	int rounds = 20, spawn = 0;
	bool spawned = false, bad = false, expect_page_moves = false;
	std::string unknown;
	for (int k = 1; k < argc; ++k) {
		std::string arg = argv[k];
		if (arg == "--seed" && k + 1 < argc)
			seed = std::strtoull(argv[++k], nullptr, 10);
		else if (arg == "--rounds" && k + 1 < argc)
			rounds = std::atoi(argv[++k]);
		else if (arg == "--spawn" && k + 1 < argc)
			spawn = std::atoi(argv[++k]);
		else if (arg == "--spawned")
			spawned = true;
		else if (arg == "--expect-page-moves")
			expect_page_moves = true;
		else if (!bad)
			bad = true, unknown = arg;
	}
	int rank = 0, world = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &gLaunched);
	if (bad || spawn < 0) {
		if (rank == 0)
			std::fprintf(stderr, "executor_mpi_test: unknown argument '%s' (use --seed N --rounds N --spawn N --expect-page-moves)\n",
				     unknown.c_str());
		MPI_Finalize();
		return 2;
	}
	if (spawn > 0)
		joinSpawned(argc, argv, spawn, spawned);
	MPI_Comm_rank(gComm, &rank);
	MPI_Comm_size(gComm, &world);
	MPI_Comm_set_errhandler(gComm, MPI_ERRORS_RETURN);

	Checker check(rank);
	std::mt19937_64 random(seed + static_cast<std::uint64_t>(world) * 1000003ULL);
	Round round(random, world);
	int executed = 0;
	for (int r = 0; r < rounds; ++r)
		for (Distribution distribution : {Distribution::Independent, Distribution::Block1d,
						  Distribution::BlockCyclic1d, Distribution::BlockCyclic2d}) {
			runDistribution(distribution, round, rank, check);
			++executed;
		}
	runBadSchedules(rank, world, check);
	runGrownInPlace(rank, world, check);
	runLargeFreshBuffers(rank, world, check);
	runPagesMoved(rank, world, check);
	runBalanced(rank, world, check);
	if (expect_page_moves && !pageMovesWork())
		check.fail("mremap does not move pages in this MPI's processes (page_move.h): every kept page is copied");
	executed += 4;

	int failures = check.failures(), total_failures = 0;
	MPI_Allreduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, gComm);
	if (rank == 0)
		std::printf("%d ranks (%d launched), %d redistributions: %s (%d failed checks)\n", world, gLaunched,
			    executed, total_failures == 0 ? "all bitwise equal" : "FAILED", total_failures);
	// A communicator spanning jobs left open would make MPI_Finalize wait for a disconnect (Open MPI 4.1).
	if (gComm != MPI_COMM_WORLD)
		MPI_Comm_free(&gComm);
	MPI_Finalize();
	return total_failures == 0 ? 0 : 1;
}
