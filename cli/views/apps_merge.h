// SPDX-License-Identifier: Apache-2.0
// The applications of several agents as one list: `malleo apps` over a virtual
// cluster asks every node and shows each application once, its processes
// grouped by the node whose agent they report to.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "failure.h"
#include "target.h"

namespace malleo::cli {

struct AgentApps {
	std::string node;  // the target's name
	std::string agent; // the agent's id, from its reply
	nlohmann::json apps = nlohmann::json::array();
	Failure problem; // an empty line: it answered
};

// Asks every target for its applications at once and waits up to timeout for all of them.
std::vector<AgentApps> askApps(const std::vector<Target> &targets, double timeout);

// {"agents": [...], "unreachable": [{"node", "problem"}], "apps": [...]}: each application once,
// with the fields of the agent hosting its rank 0 (else of the first that knows it), "processes" of
// all the agents each with its "node", and "nodes": [{"node", "active", "parked"}].
nlohmann::json mergeApps(const std::vector<AgentApps> &answers);

} // namespace malleo::cli
