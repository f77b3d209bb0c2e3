// SPDX-License-Identifier: Apache-2.0
// The workload is one round of 1024 steps, each a xorshift64 step (integer
// shifts and xors) feeding a floating multiply-add, on one dependency chain in
// registers: it measures a core's scalar speed, not memory, caches or SIMD
// width, which is what an iterative MPI process mostly gets from one more core.
//
// Normalisation: kReferenceRoundsPerSecond is the rate measured on the
// development machine (an Intel Xeon family 6 model 207 guest, one core, GCC
// -O2), so a core of that speed is 1.0 and PW = cores × per-core speed reads as
// "reference cores". Only ratios between nodes matter to the policies; the
// reference just keeps the numbers near 1. The library is built at -O2 whatever
// the build type so that a debug agent does not look three times slower.
#include "calibration.h"

#include <chrono>

#include <time.h>

namespace malleo {

namespace {

// volatile: the results must be observable, or the compiler may drop the work.
volatile uint64_t integerSink;
volatile double floatSink;

void round(uint64_t &x, double &f)
{
	for (int i = 0; i < 1024; ++i) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		f = f * 0.999999 + static_cast<double>(x & 0xff) * 1e-9;
	}
}

} // namespace

double perCoreSpeed(uint64_t rounds, double seconds)
{
	if (!(seconds > 0))
		return 0.0;
	return static_cast<double>(rounds) / seconds / kReferenceRoundsPerSecond;
}

namespace {

double threadCpuSeconds()
{
	timespec t{};
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double wallSeconds()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

Calibration calibrate(int milliseconds, CalibrationClock clock)
{
	double (*now)() = clock == CalibrationClock::ThreadCpu ? threadCpuSeconds : wallSeconds;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	double f = 1.0;

	// One untimed batch first: page faults and a core waking from a low-power
	// state would otherwise count against the node.
	for (int i = 0; i < 64; ++i)
		round(x, f);

	const double budget = milliseconds * 1e-3;
	const double start = now();
	double elapsed = 0.0;
	uint64_t rounds = 0;
	// Batches of 16 rounds keep clock reads well under 1 % of the time.
	while (elapsed < budget) {
		for (int i = 0; i < 16; ++i)
			round(x, f);
		rounds += 16;
		elapsed = now() - start;
	}
	integerSink = x;
	floatSink = f;
	return {perCoreSpeed(rounds, elapsed), rounds, elapsed};
}

} // namespace malleo
