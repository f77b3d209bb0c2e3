// SPDX-License-Identifier: Apache-2.0
// Starting the agents of a virtual cluster: K agents on this machine, each on
// its own CPU with its own run directory, joined through n1 as their one seed
// peer, each awaited until it has written its agent.json.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster_file.h"
#include "failure.h"
#include "node_config.h"

namespace malleo::cli {

struct Launch {
	ClusterNode node;
	std::string logPath;
	bool ready = false;
};

class ClusterStarter
{
public:
	ClusterStarter(unsigned nodes, std::string logLevel, std::string dir, std::string malleod,
		       NodeConfigInput input, std::map<std::string, nlohmann::json> nodeFiles);

	// Starts n1, waits for it, then the others; records them in cluster.json
	// as they start. On failure the caller rolls back.
	std::optional<Failure> start();
	// Stops whatever start() started and removes cluster.json.
	void rollback();
	const ClusterFile &cluster() const { return cluster_; }

private:
	std::optional<Failure> launch(unsigned index, const std::vector<std::string> &peers);
	std::optional<Failure> record();

	unsigned nodes_;
	std::string logLevel_;
	std::string dir_;
	std::string malleod_;
	NodeConfigInput input_;
	std::map<std::string, nlohmann::json> nodeFiles_;
	std::vector<int> cpus_;
	std::vector<Launch> launches_;
	ClusterFile cluster_;
};

} // namespace malleo::cli
