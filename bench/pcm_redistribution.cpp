// SPDX-License-Identifier: Apache-2.0
// Redistribution throughput of the pcm_bridge executor next to memcpy bandwidth, in one run on one machine
// (docs/performance.md, "Redistribution").
//
// For each scenario (old ranks -> new ranks, the data evenly spread in 1D blocks, as heat2d's columns, over ranks
// 0..k-1 before and over the new ranks in the order the bridge's plan gives them after: makePlan of plan.h on a
// world whose other ranks are spare) and each array size, the schedule runs `repeats` times on a communicator of the
// ranks the scenario uses (the others park); a run's time is the slowest rank's, from a common barrier to the end of
// the redistribution and of what the session does next with the elements a process keeps (they stay in its old
// buffer, or move into the new one by pages: finishLocal). memcpy bandwidth is measured by rank 0 copying the whole
// array while every other rank waits without spinning (MPI_Ibarrier + MPI_Test + 1 ms sleep): between two touched
// buffers after each run (the second of two copies in a row), and, after the runs, into a block allocated and faulted
// in as the session and the executor do for a reconfiguration's new buffer (`fresh`). Medians over the repeats.
//
//	mpirun -n 4 build/bench/pcm_redistribution_openmpi [--sizes-mb 10,100,300] [--scenarios 1:2,2:4,4:2]
//	    [--repeats 5] [--column-doubles 1024] [--method executor|shared] [--new-buffer touched|session]
//
// Options:
//   --sizes-mb        array sizes in MiB
//   --scenarios       old:new rank counts; the world must hold the larger of the two
//   --repeats         timed runs per scenario and size (the 300 MiB case runs max(3, repeats / 2))
//   --column-doubles  doubles per element (a heat2d column); the element is one contiguous MPI type
//   --method          shared: the bridge's default, shared blocks (pcm_bridge/src/memory/shared_pages.h):
//                     the old blocks and each run's fresh new blocks are shared blocks placed by the global index of
//                     their first element, each run takes pages over (takePages) before the executor copies the
//                     rest, and what was taken is handed back after each run, outside the timing; --new-buffer does
//                     not apply. executor (the default): the executor between private buffers, as the bridge does
//                     with MALLEO_PCM_SHARED_PAGES=off
//   --new-buffer      (executor) touched: the new buffers are allocated once and touched before timing, the
//                     executor's throughput between reused buffers (the default); session: allocated anew inside
//                     every timed run as the session allocates a reconfiguration's new buffers (allocateBlock: on a
//                     page, untouched), so that the run pays the first touch of their pages
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "executor/executor.h"
#include "executor/page_adoption.h"
#include "memory/page_move.h"
#include "plan/plan.h"

using namespace malleo;
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
Layout evenLayout(const std::vector<int>& ranks, std::int64_t elements)
{
	Layout layout;
	layout.distribution = Distribution::Block1d;
	layout.globalCount = elements;
	layout.ranks = ranks;
	const auto parts = static_cast<std::int64_t>(ranks.size());
	for (std::int64_t p = 0; p < parts; ++p)
		layout.counts.push_back(elements / parts + (p < elements % parts ? 1 : 0));
	return layout;
}

// Ranks 0..n-1.
std::vector<int> firstRanks(int n)
{
	std::vector<int> ranks;
	for (int r = 0; r < n; ++r)
		ranks.push_back(r);
	return ranks;
}

// The ranks in the new slots when `old_ranks` processes (ranks 0..old_ranks-1) become `new_ranks`, planned by the
// bridge's own rules for the C++ API (makePlan) on a world whose other ranks are spare: a split's joiners follow the
// processes whose blocks they share (2 -> 4: ranks 0, 2, 1, 3), a merge keeps the first process of each group of
// slots (4 -> 2: ranks 0 and 2).
std::vector<int> newSlots(int old_ranks, int new_ranks)
{
	if (old_ranks == new_ranks)
		return firstRanks(new_ranks);
	const int world = std::max(old_ranks, new_ranks);
	Membership membership;
	membership.reusable = true;
	membership.state.assign(static_cast<std::size_t>(world), ProcessState::Spare);
	membership.node.assign(static_cast<std::size_t>(world), "");
	for (int r = 0; r < old_ranks; ++r) {
		membership.active.push_back(r);
		membership.state[static_cast<std::size_t>(r)] = ProcessState::Active;
	}
	Command command;
	command.op = new_ranks > old_ranks ? Operation::Split : Operation::Merge;
	command.count = std::abs(new_ranks - old_ranks);
	Plan plan;
	const std::string why = makePlan(command, 0, membership, plan);
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

[[noreturn]] void outOfMemory(std::size_t bytes)
{
	std::fprintf(stderr, "pcm_redistribution: out of memory for %zu bytes\n", bytes);
	MPI_Abort(MPI_COMM_WORLD, 1);
	std::abort();
}

// A buffer on a page (as the session's are, so that kept elements can move by pages), filled before any timing; or
// a shared block of the bridge's starting `shared_lead` bytes into a page.
class Buffer
{
public:
	Buffer(std::size_t bytes, char fill, std::int64_t shared_lead = -1) : bytes_(bytes)
	{
		if (bytes == 0)
			return;
		if (shared_lead >= 0) {
			data_ = static_cast<char*>(allocateShared(bytes, static_cast<std::size_t>(shared_lead)));
			shared_ = true;
			if (!data_)
				outOfMemory(bytes);
			if (fill)  // a new block reads zeros, and its pages are left for the run to take over
				std::memset(data_, fill, bytes);
			return;
		}
		const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
		data_ = static_cast<char*>(std::aligned_alloc(page, (bytes + page - 1) / page * page));
		if (!data_)
			outOfMemory(bytes);
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
	// Frees the buffer and allocates it again untouched, as the session allocates a reconfiguration's new buffer.
	void renew()
	{
		if (bytes_ == 0)
			return;
		std::free(data_);
		data_ = static_cast<char*>(
		    allocateBlock(static_cast<std::int64_t>(bytes_), 0, 1, false, Placement::Page));
		if (!data_)
			outOfMemory(bytes_);
	}
	std::size_t size() const { return bytes_; }

private:
	char* data_ = nullptr;
	std::size_t bytes_ = 0;
	bool shared_ = false;
};

struct Options {
	bool shared = false;	    // --method shared
	bool fresh_buffers = false;  // --new-buffer session
};

struct Figures {
	double seconds;
	double moved_bytes;  // between different ranks, all ranks together
	double memcpy_seconds;
	double fresh_memcpy_seconds;  // into a buffer allocated just before
};

// One scenario at one array size, on this rank: the layouts before and after and the bridge's schedule between them,
// this rank's buffers, and the communicator of the ranks the scenario uses (a 1 -> 2 run is a two-process job; the
// others park).
class Measurement
{
public:
	Measurement(int old_ranks, int new_ranks, std::int64_t elements, MPI_Datatype element, int element_bytes,
		    const Options& options, int rank);
	Measurement(const Measurement&) = delete;
	Measurement& operator=(const Measurement&) = delete;
	~Measurement();
	// Collective over the world: `repeats` timed runs after one that warms up, and the memcpy baselines.
	Figures run(int repeats);

private:
	std::size_t bytes(const Layout& layout) const;
	std::int64_t firstElement(const Layout& layout) const;
	std::int64_t lead(const Layout& layout) const;
	void fillOld();
	ExecuteResult redistribute();
	void timeRun(int r, int repeats);
	void timeMemcpy(int r);
	void timeFreshCopies(int repeats);
	void check() const;

	const Options& options_;
	const int rank_;
	const MPI_Datatype element_;
	const std::size_t size_;  // bytes of an element
	const Layout from_, to_;
	const Schedule plan_;
	Buffer old_buffer_;
	Buffer new_buffer_;
	// As the session does: this rank's new buffer is its old one when it keeps the start of its block and gets
	// nothing else.
	const bool in_place_;
	Buffer& target_;
	std::optional<Buffer> copy_from_, copy_to_;  // rank 0's, for memcpy
	MPI_Comm comm_ = MPI_COMM_NULL;
	// --method shared: the last run's new block and what it took, handed back before the next run (not kept, so
	// the old blocks keep their pages) and after the check.
	std::unique_ptr<Buffer> shared_new_;
	std::unique_ptr<TakenPages> taken_;
	std::vector<double> times_, copies_, fresh_copies_;
	double moved_ = 0;
};

Measurement::Measurement(int old_ranks, int new_ranks, std::int64_t elements, MPI_Datatype element,
			 int element_bytes, const Options& options, int rank)
	: options_(options), rank_(rank), element_(element), size_(static_cast<std::size_t>(element_bytes)),
	  from_(evenLayout(firstRanks(old_ranks), elements)),
	  to_(evenLayout(newSlots(old_ranks, new_ranks), elements)), plan_(schedule(from_, to_)),
	  old_buffer_(bytes(from_), 1, lead(from_)),
	  new_buffer_(options.shared ? 0 : bytes(to_), 0),  // shared: one per run
	  in_place_(old_buffer_.size() && new_buffer_.size() && keepsInPlace(plan_, rank)),
	  target_(in_place_ ? old_buffer_ : new_buffer_)
{
	fillOld();
	const std::size_t array_bytes = static_cast<std::size_t>(elements) * size_;
	copy_from_.emplace(rank == 0 ? array_bytes : 0, 1);
	copy_to_.emplace(rank == 0 ? array_bytes : 0, 0);
	MPI_Comm_split(MPI_COMM_WORLD, rank < std::max(old_ranks, new_ranks) ? 0 : MPI_UNDEFINED, rank, &comm_);
	if (comm_ != MPI_COMM_NULL)
		MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);  // execute() runs on it
}

Measurement::~Measurement()
{
	if (comm_ != MPI_COMM_NULL)
		MPI_Comm_free(&comm_);
}

std::size_t Measurement::bytes(const Layout& layout) const
{
	const int slot = slotOf(layout, rank_);
	return slot >= 0 ? static_cast<std::size_t>(localCount(layout, slot)) * size_ : 0;
}

std::int64_t Measurement::firstElement(const Layout& layout) const
{
	std::int64_t first = 0;
	for (int slot = 0; slot < slotOf(layout, rank_); ++slot)
		first += layout.counts[static_cast<std::size_t>(slot)];
	return first;
}

// Shared blocks placed as the session places them: by their first element's global index.
std::int64_t Measurement::lead(const Layout& layout) const
{
	if (!options_.shared)
		return -1;
	return static_cast<std::int64_t>(sharedLead(firstElement(layout), 0, static_cast<std::int64_t>(size_)));
}

// Each element's bytes say its global index, so the result is checked after the last run (the executor's
// correctness is tested elsewhere; this guards the benchmark's own set-up).
char pattern(std::int64_t global)
{
	return static_cast<char>(global % 251 + 1);
}

void Measurement::fillOld()
{
	for (std::size_t k = 0; k < old_buffer_.size() / size_; ++k)
		std::memset(old_buffer_.data() + k * size_, pattern(firstElement(from_) + static_cast<std::int64_t>(k)),
			    size_);
}

// One redistribution, and what the session does next with the elements a process keeps.
ExecuteResult Measurement::redistribute()
{
	ExecuteResult result;
	ExecuteOptions execute_options;
	execute_options.deferLocal = true;
	if (!options_.shared) {
		result = execute(comm_, plan_, old_buffer_.data(), target_.data(), element_, execute_options);
		// Every rank knows the transfers succeeded once the allreduce after says so; the session finishes the
		// local part after its own agreement, this one at once (same work).
		if (result.mpiError == MPI_SUCCESS)
			finishLocal(plan_, rank_, old_buffer_.data(), target_.data(), size_);
		return result;
	}
	// As the session does for a buffer in shared blocks (MALLEO_PCM_SHARED_PAGES on, the default).
	shared_new_ = std::make_unique<Buffer>(bytes(to_), 0, lead(to_));
	taken_ = std::make_unique<TakenPages>();
	Schedule rest;
	result.mpiError = takePages(comm_, rank_, plan_, old_buffer_.data(),
				     static_cast<std::int64_t>(old_buffer_.size() / size_), shared_new_->data(),
				     static_cast<std::int64_t>(shared_new_->size() / size_), size_, *taken_, rest);
	const ExecuteResult copied = execute(comm_, rest, old_buffer_.data(), shared_new_->data(), element_,
					     execute_options);
	result.bytesSent = copied.bytesSent;
	if (result.mpiError == MPI_SUCCESS)
		result.mpiError = copied.mpiError;
	if (result.mpiError == MPI_SUCCESS)
		finishLocal(rest, rank_, old_buffer_.data(), shared_new_->data(), size_);
	return result;
}

// Run `r` on the ranks that take part: its time is the slowest rank's, from a common barrier.
void Measurement::timeRun(int r, int repeats)
{
	if (r == repeats && new_buffer_.size() && !in_place_)
		std::memset(new_buffer_.data(), 0, new_buffer_.size());
	shared_new_.reset();
	taken_.reset();
	MPI_Barrier(comm_);
	double start = MPI_Wtime();
	if (options_.fresh_buffers && !in_place_)
		new_buffer_.renew();
	const ExecuteResult result = redistribute();
	double elapsed = MPI_Wtime() - start, slowest = 0;
	MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm_);
	double sent = static_cast<double>(result.bytesSent), all_sent = 0;
	MPI_Allreduce(&sent, &all_sent, 1, MPI_DOUBLE, MPI_SUM, comm_);
	int error = result.mpiError, any_error = 0;
	MPI_Allreduce(&error, &any_error, 1, MPI_INT, MPI_MAX, comm_);
	if (any_error != MPI_SUCCESS) {
		if (rank_ == 0)
			std::fprintf(stderr, "pcm_redistribution: execute failed with MPI error %d\n", any_error);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (r > 0)
		times_.push_back(slowest);
	moved_ = all_sent;
	if (!options_.shared && !in_place_ && r < repeats)
		fillOld();  // pages moved out of it read zeros now
}

// Rank 0: memcpy of the whole array between two touched buffers. Twice, the second timed: on some VMs the first
// access to memory after the process unmapped some (the run's freed buffers) runs several times slower
// (docs/performance.md, "Machines"); the baseline is what memcpy reaches between touched buffers.
void Measurement::timeMemcpy(int r)
{
	const std::size_t array_bytes = copy_from_->size();
	std::memcpy(copy_to_->data(), copy_from_->data(), array_bytes);
	const double copy_start = MPI_Wtime();
	std::memcpy(copy_to_->data(), copy_from_->data(), array_bytes);
	if (r > 0)
		copies_.push_back(MPI_Wtime() - copy_start);
}

// Rank 0, after the runs (so that its buffers' unmapping does not slow them): memcpy into a block allocated as the
// session allocates a new buffer (on a page: fresh pages from the kernel each time) and faulted in with one madvise
// first, as the executor does.
void Measurement::timeFreshCopies(int repeats)
{
	const std::size_t array_bytes = copy_from_->size();
	for (int r = 0; r < repeats; ++r) {
		const double copy_start = MPI_Wtime();
		auto* fresh = static_cast<char*>(
		    allocateBlock(static_cast<std::int64_t>(array_bytes), 0, 1, false, Placement::Page));
		if (!fresh)
			outOfMemory(array_bytes);
		populatePages(fresh, array_bytes);
		std::memcpy(fresh, copy_from_->data(), array_bytes);
		fresh_copies_.push_back(MPI_Wtime() - copy_start);
		// Read back, so the copy cannot be optimised away.
		if (fresh[array_bytes / 2] != copy_from_->data()[array_bytes / 2])
			MPI_Abort(MPI_COMM_WORLD, 1);
		std::free(fresh);
	}
}

// The last run's new buffer holds each element's pattern.
void Measurement::check() const
{
	const char* result = shared_new_ ? shared_new_->data() : target_.data();
	for (std::size_t k = 0; k < bytes(to_) / size_; ++k) {
		const char expected = pattern(firstElement(to_) + static_cast<std::int64_t>(k));
		const char* at = result + k * size_;
		if (at[0] != expected || at[size_ / 2] != expected || at[size_ - 1] != expected) {
			std::fprintf(stderr, "pcm_redistribution: rank %d: element %zu of the new buffer is wrong\n", rank_,
				     k);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

Figures Measurement::run(int repeats)
{
	for (int r = 0; r < repeats + 1; ++r) {	 // the first run warms up and is not counted
		if (comm_ != MPI_COMM_NULL)
			timeRun(r, repeats);
		parkedBarrier(MPI_COMM_WORLD);
		if (rank_ == 0)
			timeMemcpy(r);
		parkedBarrier(MPI_COMM_WORLD);
	}
	if (rank_ == 0)
		timeFreshCopies(repeats);
	parkedBarrier(MPI_COMM_WORLD);
	if (comm_ != MPI_COMM_NULL)
		check();
	// Every rank has checked before any releases its old block: with --method shared, an old block not kept
	// (taken) by the last run still owns the pages the others' new blocks map, and punches them when released.
	parkedBarrier(MPI_COMM_WORLD);
	shared_new_.reset();
	taken_.reset();
	return {times_.empty() ? 0 : median(times_), moved_, copies_.empty() ? 0 : median(copies_),
		fresh_copies_.empty() ? 0 : median(fresh_copies_)};
}

Figures measure(int old_ranks, int new_ranks, std::int64_t elements, MPI_Datatype element, int element_bytes,
		const Options& options, int repeats, int rank)
{
	Measurement measurement(old_ranks, new_ranks, elements, element, element_bytes, options, rank);
	return measurement.run(repeats);
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

// --scenarios and --sizes-mb; false when an entry is bad (rank 0 says which).
bool parseLists(const std::string& scenarios_text, const std::string& sizes_text, int world, int rank,
		std::vector<std::pair<int, int>>& scenarios, std::vector<double>& sizes)
{
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
		return false;
	}
	return true;
}

}  // namespace

int main(int argc, char** argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, world = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world);

	CLI::App app{"Redistribution throughput of the pcm_bridge executor next to memcpy bandwidth"};
	std::string sizes_text = "10,100,300", scenarios_text = "1:2,2:4,4:2";
	int repeats = 5, column_doubles = 1024;
	app.add_option("--sizes-mb", sizes_text, "array sizes in MiB, comma-separated");
	app.add_option("--scenarios", scenarios_text, "old:new rank counts, comma-separated");
	app.add_option("--repeats", repeats, "timed runs per scenario and size")->check(CLI::Range(1, 1000));
	app.add_option("--column-doubles", column_doubles, "doubles per element")->check(CLI::Range(1, 1 << 20));
	std::string method = "executor", new_buffer = "touched";
	app.add_option("--method", method, "executor (private buffers) or shared (the bridge's shared blocks)")
	    ->check(CLI::IsMember({"executor", "shared"}));
	app.add_option("--new-buffer", new_buffer, "touched (reused buffers) or session (fresh, as a reconfiguration's)")
	    ->check(CLI::IsMember({"touched", "session"}));
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError& e) {
		int code = rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
		MPI_Finalize();
		return code;
	}
	Options options;
	options.shared = method == "shared";
	options.fresh_buffers = new_buffer == "session";

	std::vector<std::pair<int, int>> scenarios;
	std::vector<double> sizes;
	if (!parseLists(scenarios_text, sizes_text, world, rank, scenarios, sizes)) {
		MPI_Finalize();
		return 2;
	}

	MPI_Datatype column;
	MPI_Type_contiguous(column_doubles, MPI_DOUBLE, &column);
	MPI_Type_commit(&column);
	int element_bytes = column_doubles * 8;
	if (rank == 0)
		std::printf(
		    "%d ranks, elements of %d bytes, median of %d runs; %s, new buffer %s\n\n"
		    "| scenario | array MiB | median s | array GB/s | moved GB/s | memcpy GB/s | array / memcpy | fresh memcpy GB/s | "
		    "array / fresh memcpy |\n"
		    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
		    world, element_bytes, repeats, method.c_str(), options.shared ? "shared" : new_buffer.c_str());
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
