// SPDX-License-Identifier: Apache-2.0
// `malleo cluster down`: every node leaves (SIGTERM), stragglers are killed; the hosts of a `cluster up --hosts`
// (network namespaces, veths, files) are removed after them.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cluster_file.h"
#include "cluster_lock.h"
#include "cluster_commands.h"
#include "cpu_load.h"
#include "netns_hosts.h"
#include "node_stop.h"
#include "target.h"

namespace malleo::cli {

namespace {

// The agent promises to leave within 2 s; this leaves room for a loaded machine.
constexpr double kGrace = 5.0;

} // namespace

int clusterDownCommand(const GlobalOptions &options, bool json)
{
	const std::string dir = clusterDir(options);
	Failure failure;
	// What a `cluster up --hosts` made, also when it crashed before it recorded a node: hosts.json lists it all.
	auto removeHosts = [&] {
		std::vector<std::string> left = removeHostNetwork(dir);
		for (const std::string &line : left)
			std::cerr << "malleo: " << line << '\n';
		return left.empty();
	};
	if (!std::filesystem::exists(clusterFilePath(dir))) {
		std::unique_ptr<ClusterLock> lock;
		if (std::filesystem::exists(std::filesystem::path(dir) / "hosts.json") &&
		    !(lock = ClusterLock::acquire(dir, failure)))
			return report(failure);
		if (lock && !removeHosts())
			return report({kExitFailed, "some of the cluster's hosts could not be removed; hosts.json is kept, "
						    "retry `malleo cluster down`"});
		// Nothing to stop is success: `cluster down` is safe in any clean-up script.
		if (json)
			std::cout << nlohmann::json({{"dir", dir}, {"nodes", nlohmann::json::array()}}).dump(2) << '\n';
		else
			std::cout << fmt::format("no cluster is up in {}; nothing to stop\n", dir);
		return kExitOk;
	}
	std::unique_ptr<ClusterLock> lock = ClusterLock::acquire(dir, failure);
	if (!lock)
		return report(failure);
	std::optional<ClusterFile> cluster = readClusterFile(dir, failure);
	if (!cluster)
		return report(failure.line.empty() ? Failure{kExitOk, "the cluster went down meanwhile"} : failure);

	// A node's load (`malleo load`) goes with the node: nothing else would end one started without --for.
	std::vector<LoadStop> loads;
	for (const ClusterNode &node : cluster->nodes) {
		Failure ignored;
		if (std::optional<LoadStop> load = stopLoad(node.runDir, ignored))
			loads.push_back(std::move(*load));
	}
	std::vector<NodeStop> stops = stopNodes(cluster->nodes, kGrace);
	bool survivors = false;
	for (const NodeStop &stop : stops)
		survivors |= stop.result == "survived";
	// Keep the file while a node survives, so that a second `down` can retry.
	std::error_code ec;
	bool hostsLeft = false;
	if (!survivors) {
		std::filesystem::remove(clusterFilePath(dir), ec);
		hostsLeft = !removeHosts();
	}

	if (json) {
		nlohmann::json nodes = nlohmann::json::array();
		for (const NodeStop &stop : stops)
			nodes.push_back(toJson(stop));
		nlohmann::json ended = nlohmann::json::array();
		for (const LoadStop &load : loads)
			ended.push_back(toJson(load));
		std::cout << nlohmann::json({{"dir", dir}, {"nodes", nodes}, {"loads", ended}}).dump(2) << '\n';
	} else {
		// A load whose time was up already ended by itself: only its record went.
		for (const LoadStop &load : loads)
			if (std::any_of(load.burners.begin(), load.burners.end(),
					[](const NodeStop &s) { return s.result != "not_running"; }))
				std::cout << describe(load) << '\n';
		for (const NodeStop &stop : stops)
			std::cout << describe(stop) << '\n';
		if (!survivors)
			std::cout << fmt::format("cluster in {} is down (logs stay in {}/<node>/malleod.log)\n", dir, dir);
	}
	if (survivors)
		return report({kExitFailed, "some nodes survived SIGKILL; cluster.json is kept, retry `malleo cluster down`"});
	if (hostsLeft)
		return report({kExitFailed, "some of the cluster's hosts could not be removed; hosts.json is kept, retry "
					    "`malleo cluster down`"});
	return kExitOk;
}

} // namespace malleo::cli
