// SPDX-License-Identifier: Apache-2.0
// The agents of a virtual cluster as processes: finding malleod, starting it
// detached on its CPUs, and telling whether the process we started still runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "failure.h"

namespace malleo::cli {

// MALLEOD, else beside this malleo (build tree ../agent/daemon/malleod, or the
// same directory when installed), else the PATH.
std::optional<std::string> findMalleod(Failure &failure);

// The CPUs this process may run on, in order (the nodes are spread over them).
std::vector<int> usableCpus();

// Node n<index>'s CPU unless `cluster up`/`cluster add` is given others: the usable CPUs round-robin.
std::vector<int> defaultNodeCpus(unsigned index);

class HostEntry;

// Starts argv[0] in a new session bound to cpus, stdin from /dev/null and
// stdout and stderr appended to logPath; inside host (netns_hosts.h) if given. Returns the pid, or nullopt with a
// failure when the program could not be started at all.
std::optional<pid_t> spawnDetached(const std::vector<std::string> &argv, const std::vector<int> &cpus,
				   const std::string &logPath, Failure &failure, const HostEntry *host = nullptr);

// /proc/<pid>/stat's start time, 0 when the process does not exist.
unsigned long long processStartTime(long pid);

// Whether pid still names the process that started at startTime (0: any) and
// has not exited; a zombie has exited.
bool processRuns(long pid, unsigned long long startTime);

// Reaps pid if it is our child and has exited; returns a description of how
// it ended ("exit 2", "signal 9") or empty when it is not our child or runs.
std::string reapChild(pid_t pid);

} // namespace malleo::cli
