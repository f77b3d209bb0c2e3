// SPDX-License-Identifier: Apache-2.0
// The options every subcommand shares: which agent to talk to and how long to wait.
#pragma once

#include <string>

namespace malleo::cli {

struct GlobalOptions {
	std::string agent;      // --agent, else MALLEO_AGENT, else the default endpoint
	std::string node;       // --node: a node of the virtual cluster
	std::string clusterDir; // --cluster-dir, else MALLEO_CLUSTER_DIR, else /tmp/malleo-cluster-<uid>
	double timeout = 2.0;   // --timeout, seconds
};

} // namespace malleo::cli
