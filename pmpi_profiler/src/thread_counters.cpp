// SPDX-License-Identifier: Apache-2.0
#include "thread_counters.h"

#include <mutex>

#include "process_state.h"

namespace malleo::pmpi {

constinit thread_local ThreadCounters *tCounters __attribute__((tls_model("initial-exec"))) =
    nullptr;

namespace {

std::mutex gThreadsLock;
std::atomic<ThreadCounters *> gThreads{nullptr};

} // namespace

// Counters are never freed: the reporter may read a thread's counters after that thread has exited.
ThreadCounters *attachThread()
{
	auto *ts = new ThreadCounters();
	{
		std::lock_guard<std::mutex> lock(gThreadsLock);
		ts->next = gThreads.load(std::memory_order_relaxed);
		gThreads.store(ts, std::memory_order_release);
	}
	tCounters = ts;
	return ts;
}

PeerCounters *attachPeers(ThreadCounters *ts)
{
	auto *peers = new PeerCounters[worldSize() + 1];
	ts->peers.store(peers, std::memory_order_release);
	return peers;
}

ThreadCounters *firstThread()
{
	return gThreads.load(std::memory_order_acquire);
}

} // namespace malleo::pmpi
