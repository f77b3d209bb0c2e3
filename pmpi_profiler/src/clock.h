// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace malleo::pmpi {

// The TSC costs a few ns where clock_gettime costs ~20 ns on these VMs; ticks are converted to
// nanoseconds at report time from two (ticks, CLOCK_MONOTONIC) pairs, so the hot path never does
// the division.
inline uint64_t ticks()
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
#endif
}

inline uint64_t monotonicNs()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

} // namespace malleo::pmpi
