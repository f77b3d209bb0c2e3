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

Calibration calibrate(int milliseconds)
{
	using Clock = std::chrono::steady_clock;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	double f = 1.0;

	// One untimed batch first: page faults and a core waking from a low-power
	// state would otherwise count against the node.
	for (int i = 0; i < 64; ++i)
		round(x, f);

	const auto budget = std::chrono::milliseconds(milliseconds);
	const auto start = Clock::now();
	auto now = start;
	uint64_t rounds = 0;
	// Batches of 16 rounds keep clock reads well under 1 % of the time.
	while (now - start < budget) {
		for (int i = 0; i < 16; ++i)
			round(x, f);
		rounds += 16;
		now = Clock::now();
	}
	integerSink = x;
	floatSink = f;

	double seconds = std::chrono::duration<double>(now - start).count();
	return {perCoreSpeed(rounds, seconds), rounds, seconds};
}

} // namespace malleo
