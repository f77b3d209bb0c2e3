// SPDX-License-Identifier: Apache-2.0
#include "lifecycle.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "agent_hook.h"
#include "clock.h"
#include "comm_table.h"
#include "iterations.h"
#include "job_report.h"
#include "mpi_include.h"
#include "process_state.h"
#include "world_substitution.h"

namespace malleo::pmpi {

namespace {

std::atomic<bool> gInitialized{false};
std::atomic<bool> gReported{false};

Mode modeFromEnvironment()
{
	const char *value = std::getenv("MALLEO_PROFILE");
	if (!value || !*value || !std::strcmp(value, "full"))
		return Mode::Full;
	if (!std::strcmp(value, "off") || !std::strcmp(value, "0"))
		return Mode::Off;
	if (!std::strcmp(value, "summary"))
		return Mode::Summary;
	std::fprintf(stderr,
		     "malleo-pmpi: MALLEO_PROFILE=%s is not off, summary or full; using full\n",
		     value);
	return Mode::Full;
}

// A program that returns from main or calls exit() without MPI_Finalize: the other ranks may be
// gone, so this rank writes its own report instead of gathering.
void atExit()
{
	if (gInitialized.load() && !gReported.exchange(true))
		writeRankReport("exit without MPI_Finalize");
}

__attribute__((constructor)) void loadProfiler()
{
	gMode = modeFromEnvironment();
	updateBypass();
	const uint64_t t = ticks(); // before the clock, as nsPerTick reads its pair
	setStart(t, monotonicNs());
}

} // namespace

void onInit()
{
	if (gInitialized.exchange(true))
		return;
	int size = 0, rank = 0;
	PMPI_Comm_size(MPI_COMM_WORLD, &size);
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	setWorld(size, rank);
	gWorldInfo = lookupCommSlow(MPI_COMM_WORLD);
	noteJobOrigin();
	agentInit(); // collective: before the first iteration starts
	setInitReturned(ticks());
	startIterations();
	std::atexit(atExit);
}

void onFinalize()
{
	if (!gInitialized.load() || gReported.exchange(true))
		return;
	agentFinalDelta();
	writeJobReport();
}

void onAbort()
{
	if (gInitialized.load() && !gReported.exchange(true))
		writeRankReport("MPI_Abort");
}

} // namespace malleo::pmpi
