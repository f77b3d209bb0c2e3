// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/parking.h"

#include <algorithm>
#include <chrono>
#include <sys/syscall.h>
#include <unistd.h>

#include "executor/host.h"

namespace malleo::pcm {

namespace {

void ignoreWakeUp(int) {}

} // namespace

ThreadAddress thisThread()
{
	return {hostKey(), static_cast<std::int64_t>(getpid()), static_cast<std::int64_t>(syscall(SYS_gettid))};
}

WakeUpSignal::WakeUpSignal()
{
	struct sigaction wake {};
	wake.sa_handler = ignoreWakeUp;
	sigemptyset(&wake.sa_mask);
	wake.sa_flags = SA_RESTART;  // sleeps are never restarted: they return early, which is the point
	sigaction(SIGURG, &wake, &previous_);
}

WakeUpSignal::~WakeUpSignal()
{
	sigaction(SIGURG, &previous_, nullptr);
}

void wakeParked(const ThreadAddress &address)
{
	if (address.host == hostKey() && address.pid > 0 && address.tid > 0)
		syscall(SYS_tgkill, static_cast<pid_t>(address.pid), static_cast<pid_t>(address.tid), SIGURG);
}

int waitSleeping(MPI_Request *request, MPI_Status *status, int max_sleep_us)
{
	int sleep_us = 1000;
	for (;;) {
		int done = 0;
		const int rc = MPI_Test(request, &done, status);
		if (rc != MPI_SUCCESS || done)
			return rc;
		usleep(static_cast<useconds_t>(sleep_us));
		sleep_us = std::min(sleep_us * 2, max_sleep_us);
	}
}

bool waitSleepingFor(MPI_Request *request, MPI_Status *status, double seconds)
{
	// MPI_Wtime is not used: it is only meaningful between MPI_Init and MPI_Finalize on every MPI, and this
	// helper must not care.
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	int sleep_us = 100;
	for (;;) {
		int done = 0;
		if (MPI_Test(request, &done, status) != MPI_SUCCESS || done)
			return done;
		if (std::chrono::steady_clock::now() >= deadline)
			return false;
		usleep(static_cast<useconds_t>(sleep_us));
		sleep_us = std::min(sleep_us * 2, 4000);
	}
}

std::vector<std::size_t> completeSendsFor(std::vector<MPI_Request> &requests, double seconds)
{
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	std::vector<std::size_t> pending;
	for (std::size_t i = 0; i < requests.size(); ++i) {
		const std::chrono::duration<double> left = deadline - std::chrono::steady_clock::now();
		if (requests[i] == MPI_REQUEST_NULL || waitSleepingFor(&requests[i], MPI_STATUS_IGNORE, left.count()))
			continue;
		MPI_Request_free(&requests[i]);
		pending.push_back(i);
	}
	return pending;
}

} // namespace malleo::pcm
