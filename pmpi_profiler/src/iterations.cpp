// SPDX-License-Identifier: Apache-2.0
#include "iterations.h"

#include "malleo_pmpi.h"

#include <mutex>

#include "clock.h"
#include "process_state.h"
#include "thread_counters.h"

namespace malleo::pmpi {

namespace {

// One source's iterations: each ends where the next starts, unless the process parked between them.
struct Marks {
	bool open = false;
	IterationPoint start{0, 0};
	std::vector<IterationSpan> done;

	void mark(IterationPoint now)
	{
		if (open)
			done.push_back({start, now});
		start = now;
		open = true;
	}
};

// Marks are rare (one per application iteration), so a lock and growing vectors are fine here.
std::mutex gLock;
Marks gProgram;
// The bridge's first probe starts its first iteration: what comes before it (MPI_Init, reading the
// input, allocating) is no iteration of the loop, and a program probing N times and ending with
// PCM_Finalize then counts N.
Marks gProbes;
bool gProgramMarks = false;

uint64_t mpiTicksOfThisThread()
{
	const ThreadCounters *ts = tCounters;
	uint64_t total = 0;
	for (int f = 0; ts && f < kFunctionCount; ++f)
		total += estimatedTicks(ts->fn[f]);
	return total;
}

IterationPoint now()
{
	return IterationPoint{ticks(), mpiTicksOfThisThread()};
}

} // namespace

void startIterations()
{
	const IterationPoint t = now();
	std::lock_guard<std::mutex> lock(gLock);
	gProgram.start = t;
	gProgram.open = true;
}

void setIterationsActive(bool active)
{
	const IterationPoint t = now();
	std::lock_guard<std::mutex> lock(gLock);
	for (Marks *marks : {&gProgram, &gProbes}) {
		if (!active) {
			marks->open = false;
		} else if (!marks->open) {
			// Activated inside a probe: the bridge answers this process's first probe
			// after its activation itself, without marking it, so its iteration starts
			// here.
			marks->start = t;
			marks->open = true;
		}
	}
}

std::vector<IterationSpan> recordedIterations()
{
	std::lock_guard<std::mutex> lock(gLock);
	return gProgramMarks ? gProgram.done : gProbes.done;
}

std::vector<IterationSpan> iterationsSince(IterationCursor &cursor)
{
	std::lock_guard<std::mutex> lock(gLock);
	if (cursor.program != gProgramMarks)
		cursor = IterationCursor{gProgramMarks, 0};
	const std::vector<IterationSpan> &done = gProgramMarks ? gProgram.done : gProbes.done;
	const size_t from = cursor.next < done.size() ? cursor.next : done.size();
	cursor.next = done.size();
	return std::vector<IterationSpan>(done.begin() + long(from), done.end());
}

} // namespace malleo::pmpi

// Ends the current iteration; the first one started when MPI_Init returned. A mark only records its
// end: the agent reporter reads the marks when it reports.
extern "C" void MALLEO_Iteration_mark(void)
{
	using namespace malleo::pmpi;
	if (profilingOff())
		return;
	const IterationPoint t = now();
	std::lock_guard<std::mutex> lock(gLock);
	gProgramMarks = true;
	gProgram.mark(t);
}

extern "C" void MALLEO_Iteration_probe(void)
{
	using namespace malleo::pmpi;
	if (profilingOff())
		return;
	const IterationPoint t = now();
	std::lock_guard<std::mutex> lock(gLock);
	if (!gProgramMarks)
		gProbes.mark(t);
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
