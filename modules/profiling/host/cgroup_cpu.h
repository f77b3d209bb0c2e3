// SPDX-License-Identifier: Apache-2.0
// A node that is a CPU slice of a machine: a cgroup (v1) whose cpu controller caps it at a quota of CPU time per
// period (cpu.cfs_quota_us / cpu.cfs_period_us, a quarter of a core for 25000 / 100000), and whose cpuacct
// controller counts the CPU time its processes used (cpuacct.usage, ns). The node's power is the quota in cores;
// its used share is the time used against the quota, not the machine's /proc/stat.
// Pure functions of text and numbers first, so tests feed them literal values; then the reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace malleo {

// The path of `controller`'s cgroup in the text of /proc/PID/cgroup (v1 lines "ID:CONTROLLERS:PATH", e.g.
// "1:cpu:/malleo/h1" or "4:cpu,cpuacct:/x"). Returns an empty string or why there is none.
std::string cgroupOfController(std::string_view procCgroup, std::string_view controller, std::string &path);

// The quota in cores; nullopt when the group has none (quota -1) or the numbers are not a quota.
std::optional<double> quotaCores(long long quotaUs, long long periodUs);

// The used share (0..1) of a slice of `cores` cores over `seconds`, from its CPU usage counter (ns) at both ends;
// nullopt when no time elapsed, the quota is not positive or the counter went backwards (the group was remade).
// Above 1 is cut to 1: a period's quota may be used in a burst that straddles two samples.
std::optional<double> sliceBusyFraction(uint64_t usageBeforeNs, uint64_t usageAfterNs, double seconds, double cores);

struct CpuSlice {
	std::string name;	     // the group's path under each controller's hierarchy, e.g. /malleo/h1
	std::string cpuDir;	     // <root>/cpu/<name>
	std::string cpuacctDir;      // <root>/cpuacct/<name>
	double cores = 0.0;	     // quota / period
};

// The slice of group `name` (a path under the hierarchies; "self": this process's own group of the cpu and cpuacct
// controllers, from /proc/self/cgroup) with the hierarchies under `root` (/sys/fs/cgroup). Returns an empty string
// or one line saying what is missing (no such group, no quota, not cgroup v1).
std::string openCpuSlice(const std::string &root, const std::string &name, CpuSlice &slice);

// The slice's CPU usage counter, ns. Returns an empty string or why it cannot be read.
std::string readSliceUsage(const CpuSlice &slice, uint64_t &usageNs);

} // namespace malleo
