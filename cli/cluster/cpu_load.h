// SPDX-License-Identifier: Apache-2.0
// Real CPU load for `malleo load`: busy processes (this malleo re-executed as a
// burner) pinned to CPUs, and the load.json that records them so that
// `malleo load --stop` and `malleo cluster down` can end them later.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "failure.h"
#include "netns_hosts.h"
#include "node_stop.h"

namespace malleo::cli {

// The hidden first argument that makes malleo a burner (main.cpp).
constexpr const char *kBurnerArgument = "__load-burner";

struct Burner {
	long pid = 0;
	unsigned long long startTime = 0; // tells the burner from a later process reusing its pid
	int cpu = 0;
};

struct LoadRecord {
	std::string node;	   // empty: this machine's CPUs (--cpu-list)
	std::vector<int> cpus;	   // the CPUs loaded, each once
	double start = 0;	   // unix seconds
	std::optional<double> end; // unix seconds; none: until --stop
	std::vector<Burner> burners;
};

// Where a load is recorded: <dir>/load.json (a node's run directory, or the cluster directory for
// --cpu-list).
std::string loadFilePath(const std::string &dir);

// The record in dir; nullopt with an empty failure line when there is none.
std::optional<LoadRecord> readLoad(const std::string &dir, Failure &failure);

// Whether any burner of the record still runs.
bool loadRuns(const LoadRecord &record);

// Starts `count` burners spread over cpus (one each, round robin) for `seconds` (none: until
// stopped) and records them in dir/load.json. Burners already started are ended again when a later
// one cannot start. host: each burner runs on that host (its namespaces and CPU slice).
std::optional<LoadRecord> startLoad(const std::string &dir, const std::string &node,
				    const std::vector<int> &cpus, unsigned count,
				    std::optional<double> seconds, Failure &failure,
				    const HostEntry *host = nullptr);

// Ends the burners of dir's record (SIGTERM, then SIGKILL) and removes the record unless one
// survived.
struct LoadStop {
	LoadRecord record;
	std::vector<NodeStop> burners; // one per burner, in the record's order
};
std::optional<LoadStop> stopLoad(const std::string &dir, Failure &failure);

// "1,3", "0-3", "0-1,4": the CPUs, each once; nullopt for anything else.
std::optional<std::vector<int>> parseCpuList(const std::string &list);

nlohmann::json toJson(const LoadRecord &record);
nlohmann::json toJson(const LoadStop &stop);

// "n2: ended 2 busy processes (pids 12, 13)" and the like.
std::string describe(const LoadStop &stop);

// The burner itself: spins until the CLOCK_MONOTONIC deadline (nanoseconds) in argv[2], 0 meaning
// never.
int burnerMain(int argc, char **argv);

} // namespace malleo::cli
