// SPDX-License-Identifier: Apache-2.0
// Waiting without CPU. A process that waits for a reconfiguration or for the end of the run must not sit in a
// blocking MPI call (ENVIRONMENT.md: 55-98 % of a core); it tests a nonblocking request and sleeps between tests,
// longer the longer it has waited, so a parked process costs well under 1 % of a core.
//
// A sleep costs the sleeper up to its length in reaction time. A peer on the same host that has just sent a parked
// thread a message can cut the sleep short with wakeParked(); the parked thread accepts it while a WakeUpSignal
// lives (SIGURG, whose default is to be ignored, so a late one harms no one).
#pragma once

#include <mpi.h>

#include <csignal>
#include <cstdint>
#include <vector>

namespace malleo::pcm {

// Where a parked thread can be reached: its host (hostKey, host.h), process and thread ids.
struct ThreadAddress {
	std::int64_t host = 0;
	std::int64_t pid = 0;
	std::int64_t tid = 0;
};
ThreadAddress thisThread();

// While it lives, SIGURG interrupts this process's sleeps (other system calls restart), with the handler it found
// back afterwards.
class WakeUpSignal
{
public:
	WakeUpSignal();
	~WakeUpSignal();
	WakeUpSignal(const WakeUpSignal &) = delete;
	WakeUpSignal &operator=(const WakeUpSignal &) = delete;

private:
	struct sigaction previous_ {};
};

// Interrupts the sleep of the thread at `address` when it is on this host; nothing otherwise.
void wakeParked(const ThreadAddress &address);

// Completes `request`, sleeping between tests (1 ms at first, up to `max_sleep_us`). Returns the MPI error code.
int waitSleeping(MPI_Request *request, MPI_Status *status, int max_sleep_us = 16000);

// As waitSleeping, but gives up after `seconds`: returns true when the request completed (it is then null).
bool waitSleepingFor(MPI_Request *request, MPI_Status *status, double seconds);

// Completes the sends `requests` (null ones allowed) within `seconds` in all. Those still pending then are freed (MPI
// finishes them in the background, or never: a peer that died), and their indices returned.
std::vector<std::size_t> completeSendsFor(std::vector<MPI_Request> &requests, double seconds);

} // namespace malleo::pcm
