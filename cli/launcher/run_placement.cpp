// SPDX-License-Identifier: Apache-2.0
#include "run_placement.h"

#include <fmt/format.h>

namespace malleo::cli {

namespace {

void addRanks(std::vector<RankBlock> &blocks, const ClusterNode &node, unsigned ranks)
{
	if (ranks == 0)
		return;
	// The node's name is the first variable of each block: a block on the same node is the previous one grown.
	if (!blocks.empty() && blocks.back().env.front().second == node.name) {
		blocks.back().ranks += ranks;
		return;
	}
	blocks.push_back({ranks, {{"MALLEO_NODE", node.name}, {"MALLEO_AGENT", localEndpoint(node)}}, node.host, node.cpus});
}

} // namespace

std::vector<RankBlock> placeRanks(const ClusterFile &cluster, const ClusterNode &target, unsigned active,
				  unsigned spares, const std::vector<std::string> &sparesOn,
				  const std::vector<std::string> &activeOn)
{
	std::vector<const ClusterNode *> cycle;
	for (const std::string &name : sparesOn)
		if (const ClusterNode *node = cluster.find(name))
			cycle.push_back(node);
	if (cycle.empty()) {
		for (const ClusterNode &node : cluster.nodes)
			if (node.name != target.name)
				cycle.push_back(&node);
		cycle.push_back(&target);
	}
	std::vector<const ClusterNode *> actives;
	for (const std::string &name : activeOn)
		if (const ClusterNode *node = cluster.find(name))
			actives.push_back(node);
	std::vector<RankBlock> blocks;
	if (actives.empty())
		addRanks(blocks, target, active);
	for (unsigned i = 0; !actives.empty() && i < active; ++i)
		addRanks(blocks, *actives[i % actives.size()], 1);
	for (unsigned i = 0; i < spares; ++i)
		addRanks(blocks, *cycle[i % cycle.size()], 1);
	return blocks;
}

std::vector<std::pair<std::string, std::string>> clusterEnvironment(const std::string &dir,
								    const ClusterFile &cluster)
{
	std::string nodes, agents, hosts;
	for (const ClusterNode &node : cluster.nodes) {
		if (!node.host.empty())
			hosts += fmt::format("{}{}={}", hosts.empty() ? "" : ";", node.name, node.host);
		if (!node.cpus.empty())
			nodes += fmt::format("{}{}={}", nodes.empty() ? "" : ";", node.name, fmt::join(node.cpus, ","));
		agents += fmt::format("{}{}={}", agents.empty() ? "" : ";", node.name, localEndpoint(node));
	}
	std::vector<std::pair<std::string, std::string>> env = {
		{"MALLEO_CLUSTER_DIR", dir}, {"MALLEO_NODES", nodes}, {"MALLEO_NODE_AGENTS", agents}};
	if (!hosts.empty())
		env.emplace_back("MALLEO_NODE_HOSTS", hosts);
	return env;
}

} // namespace malleo::cli
