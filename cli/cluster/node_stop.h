// SPDX-License-Identifier: Apache-2.0
// Stopping the agents of a virtual cluster: SIGTERM (a graceful leave), then
// SIGKILL for those still running after the grace period.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster_file.h"

namespace malleo::cli {

struct NodeStop {
	std::string name;
	long pid = 0;
	// "stopped": left after SIGTERM; "killed": needed SIGKILL; "not_running":
	// gone before we asked; "survived": even SIGKILL did not end it.
	std::string result;
	double seconds = 0;     // from SIGTERM to its end
	bool leftFiles = false; // agent.json still there: it did not leave cleanly
	std::string detail;     // the exit status when it was our child
};

// Signals every node at once and waits up to grace seconds for each.
std::vector<NodeStop> stopNodes(const std::vector<ClusterNode> &nodes, double grace);

nlohmann::json toJson(const NodeStop &stop);

// "n2 (pid 123): stopped after 0.21 s" and the like.
std::string describe(const NodeStop &stop);

} // namespace malleo::cli
