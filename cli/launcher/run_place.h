// SPDX-License-Identifier: Apache-2.0
// Where `malleo run`'s ranks go: the agent they report to, its node when it is one of a virtual cluster's, and the
// nodes --spares-on and --active-on name (a node whose host waits for `cluster add` among them). Read before
// anything starts, each refusal one line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cluster_file.h"
#include "failure.h"
#include "global_options.h"
#include "run_options.h"

namespace malleo::cli {

// The agent the ranks report to, and its node when it is one of the virtual cluster's.
struct RankTarget {
	std::string agent; // empty: none chosen, the profiler looks for the default agent itself
	std::string clusterDir;
	std::optional<ClusterFile> cluster;
	std::string node; // a node of `cluster`
};

struct RunPlace {
	RankTarget target;
	std::vector<ClusterNode> nodesToCome; // named by --spares-on: their hosts wait for `cluster add`
	std::vector<std::string> spareNodes;  // --spares-on, checked
	std::vector<std::string> activeNodes; // --active-on, checked
};

// Nullopt with the failure said (its status and one line) when a choice names no agent or no node of the cluster.
std::optional<RunPlace> runPlace(const GlobalOptions &options, const RunOptions &run, Failure &failure);

} // namespace malleo::cli
