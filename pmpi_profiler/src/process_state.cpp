// SPDX-License-Identifier: Apache-2.0
#include "process_state.h"

#include "clock.h"

namespace malleo::pmpi {

Mode gMode = Mode::Full;

namespace {

int gWorldSize = 0;
int gWorldRank = 0;
uint64_t gStartTicks = 0;
uint64_t gStartNs = 0;
uint64_t gInitReturnedTicks = 0;

} // namespace

int worldSize()
{
	return gWorldSize;
}

int worldRank()
{
	return gWorldRank;
}

uint64_t startTicks()
{
	return gStartTicks;
}

uint64_t initReturnedTicks()
{
	return gInitReturnedTicks;
}

double nsPerTick()
{
	const uint64_t t = ticks(), ns = monotonicNs();
	if (t <= gStartTicks || ns <= gStartNs)
		return 1.0;
	return double(ns - gStartNs) / double(t - gStartTicks);
}

void setStart(uint64_t tsc, uint64_t ns)
{
	gStartTicks = tsc;
	gStartNs = ns;
}

void setWorld(int size, int rank)
{
	gWorldSize = size;
	gWorldRank = rank;
}

void setInitReturned(uint64_t tsc)
{
	gInitReturnedTicks = tsc;
}

} // namespace malleo::pmpi
