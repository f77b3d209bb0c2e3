// SPDX-License-Identifier: Apache-2.0
// Starting the agents of a virtual cluster: K agents on this machine, each on
// its own CPU with its own run directory, joined through n1 as their one seed
// peer, each awaited until it has written its agent.json; or one more agent for
// a cluster that runs, seeded with one of its nodes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster_file.h"
#include "failure.h"
#include "netns_hosts.h"
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
	// One more node for a running cluster (`malleo cluster add`): node n<index>
	// on cpus (empty: round-robin as start() would place it), seeds as its
	// peers; recorded after the nodes of existing. On failure the caller rolls back.
	std::optional<Failure> add(const ClusterFile &existing, unsigned index, std::vector<int> cpus,
				   const std::vector<std::string> &seeds);
	// Stops whatever start() or add() started and leaves cluster.json with the
	// nodes that were there before (none: removes it).
	void rollback();
	const ClusterFile &cluster() const { return cluster_; }
	// Each node started from now on gets a host of its own in network (netns_hosts.h) and listens on its address.
	void onHosts(HostNetwork network) { network_ = std::move(network); }

private:
	std::optional<Failure> launch(unsigned index, const std::vector<std::string> &peers,
				      std::vector<int> cpus = {});
	std::optional<Failure> record();

	unsigned nodes_;
	std::string logLevel_;
	std::string dir_;
	std::string malleod_;
	NodeConfigInput input_;
	std::map<std::string, nlohmann::json> nodeFiles_;
	std::vector<Launch> launches_;
	std::vector<ClusterNode> kept_; // add(): the nodes already up, recorded first
	ClusterFile cluster_;
	std::optional<HostNetwork> network_;
};

} // namespace malleo::cli
