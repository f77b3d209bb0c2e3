// SPDX-License-Identifier: Apache-2.0
// /proc/stat as numbers: per-CPU time counters and the context-switch count,
// and the busy fraction of a CPU set between two readings. Pure functions of
// text and values, so tests feed them literal samples.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace malleo {

// One `cpuN` line, in clock ticks (USER_HZ). Fields a kernel does not print
// (older kernels stop after idle, iowait, ...) stay 0.
struct CpuTimes {
	uint64_t user = 0;
	uint64_t nice = 0;
	uint64_t system = 0;
	uint64_t idle = 0;
	uint64_t iowait = 0;
	uint64_t irq = 0;
	uint64_t softirq = 0;
	uint64_t steal = 0;
	uint64_t guest = 0;
	uint64_t guestNice = 0;
};

struct ProcStat {
	std::map<int, CpuTimes> cpus; // by OS CPU number; offline CPUs are absent
	uint64_t ctxt = 0;	      // context switches since boot, machine-wide
};

// Parses the text of /proc/stat. Returns an empty string on success, otherwise
// one line naming the line number and what is wrong with it.
std::string parseProcStat(std::string_view text, ProcStat &out);

// Busy and total ticks of one CPU between two readings.
struct CpuDelta {
	uint64_t busy = 0;
	uint64_t total = 0;
	uint64_t niced = 0; // of busy: the ticks of niced processes
};

CpuDelta cpuDelta(const CpuTimes &before, const CpuTimes &after);

// The busy and total ticks of `cpus` between two readings, summed. Returns an
// empty string on success, otherwise why not (the set is empty, or one of its
// CPUs is missing from a reading).
std::string setDelta(const ProcStat &before, const ProcStat &after, const std::vector<int> &cpus,
		     CpuDelta &sum);

// The busy fraction (UPW, 0..1) of `cpus` between two readings, all CPUs
// weighted by the ticks they accounted. Returns an empty string on success,
// otherwise why no fraction can be given (as setDelta(), or no tick elapsed).
std::string busyFraction(const ProcStat &before, const ProcStat &after,
			 const std::vector<int> &cpus, double &upw);

// Context switches per second between two readings; 0 when no time elapsed or
// the counter went backwards (a reading from another boot).
double contextSwitchRate(uint64_t before, uint64_t after, double seconds);

} // namespace malleo
