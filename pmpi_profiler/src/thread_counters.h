// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>

#include "clock.h"

// The generated table of wrapped functions for the MPI this copy of the library is built against.
#include MALLEO_PMPI_FUNCTION_TABLE

// Hot-path helpers: inlined even where the compiler's heuristics would not (it out-lined countCall
// at -O2).
#define MALLEO_HOT inline __attribute__((always_inline))

namespace malleo::pmpi {

// Written only by the thread that owns it and read by the reporter. A relaxed load and store of a
// std::atomic compiles to plain moves, so the hot path has no locked instruction yet the reporter's
// reads are not a data race.
class Counter
{
public:
	__attribute__((always_inline)) void add(uint64_t n)
	{
		value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
	}
	uint64_t get() const { return value_.load(std::memory_order_relaxed); }

private:
	std::atomic<uint64_t> value_{0};
};

enum class OpKind : uint8_t { P2p, Coll, Rma };
inline constexpr int kOpKinds = 3;

// Bin 0 holds empty messages, bin k holds sizes in [2^(k-1), 2^k).
inline constexpr int kHistogramBins = 65;

MALLEO_HOT int sizeBin(uint64_t bytes)
{
	return bytes == 0 ? 0 : 64 - __builtin_clzll(bytes);
}

// `timed` counts the calls whose time is in `ticks`: all of them, or one in kSampleEvery for
// polling calls; `outliers` counts the sampled polling calls longer than kOutlierTicks, kept in
// outlierTicks.
struct FunctionCounters {
	Counter calls;
	Counter timed;
	Counter ticks;
	Counter outliers;
	Counter outlierTicks;
	Counter bytes;
};

// Timing a call costs two TSC reads, ~15 ns each on these VMs: most of the cost of a call that
// returns at once. Polling calls and local queries (MPI_Test, MPI_Iprobe, MPI_Comm_rank, ...: role
// sample_time in mpi_functions.list) are made millions of times in loops and never wait for another
// process, so they are timed one call in kSampleEvery and the report scales their time up; their
// calls are all counted. Every other call is timed: sampling calls that may block (MPI_Wait,
// MPI_Sendrecv) gave estimates above the wall time when one sampled call was long (tried: adaptive
// sampling of calls with a short mean, on hpcc). A sampled polling call that took long was
// preempted or yielded (Open MPI's mpi_yield_when_idle): scaling it by kSampleEvery made MPI time
// exceed wall time on hpcc, so such outliers are added as they are, unscaled.
inline constexpr uint64_t kSampleEvery = 16;
inline constexpr uint64_t kOutlierTicks = 4096; // ~1.5-2 us at 2-3 GHz

struct PeerCounters {
	Counter messages;
	Counter bytes;
};

// A persistent operation as its *_init call described it, replayed at each MPI_Start.
struct PersistentOp {
	uint64_t key;
	int fn;
	OpKind kind;
	int peer;
	uint64_t bytes;
};
inline constexpr int kPersistentSlots = 1024;

struct ThreadCounters {
	int depth = 0;
	FunctionCounters fn[kFunctionCount];
	Counter histogram[kOpKinds][kHistogramBins];
	// World size + 1 entries (the last one: peers outside MPI_COMM_WORLD); allocated at the
	// first send because the world size is unknown before MPI_Init.
	std::atomic<PeerCounters *> peers{nullptr};
	PersistentOp persistent[kPersistentSlots] = {};
	ThreadCounters *next = nullptr;
};

// initial-exec: the library is preloaded, so its TLS sits in the static block and needs no
// __tls_get_addr call. constinit: no dynamic initialisation, so no TLS wrapper call on each access.
extern constinit thread_local ThreadCounters *tCounters __attribute__((tls_model("initial-exec")));

ThreadCounters *attachThread();
PeerCounters *attachPeers(ThreadCounters *ts);
ThreadCounters *firstThread();

MALLEO_HOT ThreadCounters *enterCall()
{
	ThreadCounters *ts = tCounters;
	if (!ts) [[unlikely]]
		ts = attachThread();
	++ts->depth;
	return ts;
}

MALLEO_HOT bool timeThisCall(ThreadCounters *ts, int fn)
{
	return !kFunctions[fn].polling || ts->fn[fn].calls.get() % kSampleEvery == 0;
}

// t0: the TSC before the call, when timed.
MALLEO_HOT void countCall(ThreadCounters *ts, int fn, bool timed, uint64_t t0)
{
	FunctionCounters &c = ts->fn[fn];
	c.calls.add(1);
	if (!timed)
		return;
	const uint64_t elapsed = ticks() - t0;
	if (kFunctions[fn].polling && elapsed > kOutlierTicks) [[unlikely]] {
		c.outliers.add(1);
		c.outlierTicks.add(elapsed);
		return;
	}
	c.ticks.add(elapsed);
	c.timed.add(1);
}

// All calls' ticks: exact for fully timed functions, scaled from the samples for polling ones.
inline uint64_t estimatedTicks(const FunctionCounters &c)
{
	const uint64_t timed = c.timed.get(), outliers = c.outliers.get(), ticks = c.ticks.get();
	const uint64_t typical = c.calls.get() - outliers;
	const uint64_t scaled = timed && timed != typical
				    ? uint64_t(double(ticks) * double(typical) / double(timed))
				    : ticks;
	return scaled + c.outlierTicks.get();
}

MALLEO_HOT PeerCounters *peerCounters(ThreadCounters *ts)
{
	PeerCounters *peers = ts->peers.load(std::memory_order_relaxed);
	if (!peers) [[unlikely]]
		peers = attachPeers(ts);
	return peers;
}

} // namespace malleo::pmpi
