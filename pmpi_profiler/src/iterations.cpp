// SPDX-License-Identifier: Apache-2.0
#include "iterations.h"

#include "malleo_pmpi.h"

#include <mutex>

#include "clock.h"
#include "process_state.h"
#include "thread_counters.h"

namespace malleo::pmpi {

namespace {

// Marks are rare (one per application iteration), so a lock and a growing vector are fine here.
std::mutex gLock;
IterationEnd gFirstStart{0, 0};
std::vector<IterationEnd> gEnds;

uint64_t mpiTicksOfThisThread()
{
	const ThreadCounters *ts = tCounters;
	uint64_t total = 0;
	for (int f = 0; ts && f < kFunctionCount; ++f)
		total += estimatedTicks(ts->fn[f]);
	return total;
}

} // namespace

void startIterations()
{
	std::lock_guard<std::mutex> lock(gLock);
	gFirstStart = IterationEnd{ticks(), mpiTicksOfThisThread()};
}

std::vector<IterationEnd> iterationEnds(IterationEnd *firstStart)
{
	std::lock_guard<std::mutex> lock(gLock);
	*firstStart = gFirstStart;
	return gEnds;
}

std::vector<IterationEnd> iterationEndsSince(size_t from, IterationEnd *previous)
{
	std::lock_guard<std::mutex> lock(gLock);
	if (from > gEnds.size())
		from = gEnds.size();
	*previous = from == 0 ? gFirstStart : gEnds[from - 1];
	return std::vector<IterationEnd>(gEnds.begin() + long(from), gEnds.end());
}

} // namespace malleo::pmpi

// Ends the current iteration; the first one started when MPI_Init returned. A mark only records its
// end: the agent reporter reads the marks when it reports.
extern "C" void MALLEO_Iteration_mark(void)
{
	using namespace malleo::pmpi;
	if (profilingOff())
		return;
	const IterationEnd end{ticks(), mpiTicksOfThisThread()};
	{
		std::lock_guard<std::mutex> lock(gLock);
		gEnds.push_back(end);
	}
}

// Fortran: `call malleo_iteration_mark()`.
extern "C" __attribute__((visibility("default"))) void malleo_iteration_mark_(void)
{
	MALLEO_Iteration_mark();
}

extern "C" int MALLEO_Pmpi_version(void)
{
	return MALLEO_PMPI_VERSION_MAJOR * 1000 + MALLEO_PMPI_VERSION_MINOR;
}
