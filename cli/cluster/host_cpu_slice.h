// SPDX-License-Identifier: Apache-2.0
// A host's share of the machine's CPU (`malleo cluster up --hosts K --host-cpu-quota Q`): a cgroup v1 of the cpu
// controller capped at Q cores (cpu.cfs_quota_us over a 100 ms period) and a cgroup of the cpuacct controller counting
// what it used, both named malleo-<host> at the top of their hierarchies. The host's agent and every process started
// on the host join both (the agent between fork and exec, mpirun's and hydra's daemons in the cluster's rsh agent
// script), and their children inherit them; the agent's host profiling module measures the node against the quota
// (host.cgroup).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "failure.h"

namespace malleo::cli {

// The group of a host: relative to each controller's hierarchy.
std::string cpuSliceName(const std::string &host);

// Why slices cannot be made here (not root, no cgroup v1 cpu and cpuacct hierarchies), in one line; nullopt when they
// can.
std::optional<std::string> cpuSlicesUnavailable();

// The cgroup.procs files a process writes itself into ("0": the writer) to join the slice.
std::vector<std::string> cpuSliceProcsFiles(const std::string &name);

// Makes the slice (both groups) with a quota of `cores` cores.
std::optional<Failure> makeCpuSlice(const std::string &name, double cores);

// Moves what still runs in the slice to the hierarchies' root groups, then removes both groups. Returns one line per
// thing that could not be done (empty: gone, or there was none).
std::vector<std::string> removeCpuSlice(const std::string &name);

} // namespace malleo::cli
