// SPDX-License-Identifier: Apache-2.0
// Which agent (or agents) a command talks to: --agent, --node, MALLEO_AGENT,
// the virtual cluster, or the default endpoint, in that order.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "agent_client.h"
#include "cluster_file.h"
#include "failure.h"
#include "global_options.h"

namespace malleo::cli {

struct Target {
	std::string name;     // the node name, or the endpoint when there is none
	std::string endpoint; // the agent's local endpoint
};

// The cluster directory after --cluster-dir and MALLEO_CLUSTER_DIR.
std::string clusterDir(const GlobalOptions &options);

// The node --node names in the virtual cluster's cluster.json; without a cluster
// up, or for a name it lacks, nullopt with the failure said.
std::optional<ClusterNode> clusterNode(const GlobalOptions &options, Failure &failure);

// The one agent a command such as `status` talks to: --agent, --node or
// MALLEO_AGENT, else the default endpoint (malleo/run_dir.h) when its socket exists,
// else the first node of the virtual cluster when one is up, else the default
// endpoint; a failure when there is no default (not root, no XDG_RUNTIME_DIR).
std::optional<Target> singleTarget(const GlobalOptions &options, Failure &failure);

// A client of singleTarget()'s agent (its endpoint: client->endpoint()); null with the failure said.
std::unique_ptr<AgentClient> connectSingleTarget(zmq::context_t &context, const GlobalOptions &options,
						 Failure &failure);

// The agents `top` watches: the one named by --agent, --node or MALLEO_AGENT,
// else every node of the virtual cluster when one is up, else the default endpoint.
std::optional<std::vector<Target>> watchTargets(const GlobalOptions &options, Failure &failure);

} // namespace malleo::cli
