// SPDX-License-Identifier: Apache-2.0
#include "run_place.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include <malleo/run_dir.h>

#include "netns_hosts.h"
#include "node_process.h"
#include "target.h"

namespace fs = std::filesystem;

namespace malleo::cli {

namespace {

// The agent every other command would talk to (--agent, --node, MALLEO_AGENT, else the default agent, else the
// virtual cluster's first node). Nullopt with the failure said when an explicit choice names no agent.
std::optional<RankTarget> rankTarget(const GlobalOptions &options, Failure &failure)
{
	const char *env = std::getenv("MALLEO_AGENT");
	const bool chosen = !options.agent.empty() || !options.node.empty() || env;
	// An empty MALLEO_AGENT means no agent to the ranks (docs/pcm-api.md), not the default one; it reaches them as is.
	if (options.agent.empty() && options.node.empty() && env && !*env)
		return RankTarget{};
	std::optional<Target> target = singleTarget(options, failure);
	if (!target) {
		if (chosen)
			return std::nullopt;
		return RankTarget{};
	}
	if (!chosen && target->endpoint == defaultAgentEndpoint())
		return RankTarget{};
	std::error_code ec; // the ranks may start elsewhere than here: the directory they get is absolute
	RankTarget found{target->endpoint, fs::absolute(clusterDir(options), ec).lexically_normal().string(),
			 std::nullopt, {}};
	Failure ignored; // a run that names an agent outside any cluster does not depend on one
	found.cluster = readClusterFile(found.clusterDir, ignored);
	if (found.cluster)
		for (const ClusterNode &node : found.cluster->nodes)
			if (node.local == target->endpoint || localEndpoint(node) == target->endpoint)
				found.node = node.name;
	if (found.node.empty())
		found.cluster.reset();
	return found;
}

// A node to come: `cluster up --hosts K --nodes N` made the hosts of nodes N+1..K too, whose agents `cluster add`
// starts later. A spare rank may wait on such a host from the start, as a machine that joins would have one: it
// registers with the node's agent once that agent runs. The node is described as `cluster add` will start it.
std::optional<ClusterNode> nodeToCome(const RankTarget &target, const std::string &name)
{
	Failure none;
	const std::optional<HostNetwork> network = readHostNetwork(target.clusterDir, none);
	const NetHost *host = network ? network->ofNode(name) : nullptr;
	const std::optional<unsigned> index = nodeIndex(name);
	if (!host || !index)
		return std::nullopt;
	ClusterNode node;
	node.name = name;
	node.runDir = (fs::path(target.clusterDir) / name).string();
	node.cpus = defaultNodeCpus(*index);
	node.host = host->name;
	node.address = host->address;
	return node;
}

// Whether name is a node to come, added to toCome the first time.
bool isNodeToCome(const RankTarget &target, const std::string &name, std::vector<ClusterNode> &toCome)
{
	if (std::any_of(toCome.begin(), toCome.end(), [&name](const ClusterNode &n) { return n.name == name; }))
		return true;
	std::optional<ClusterNode> node = nodeToCome(target, name);
	if (node)
		toCome.push_back(std::move(*node));
	return node.has_value();
}

// The names of an option that lists nodes of the ranks' virtual cluster (--spares-on, --active-on), each checked.
// With toCome, a node whose host waits for `cluster add` is accepted too, and added to toCome.
std::optional<std::vector<std::string>> clusterNodes(const char *option, const std::string &value,
						      const RankTarget &target, std::string &problem,
						      std::vector<ClusterNode> *toCome = nullptr)
{
	std::vector<std::string> names;
	if (value.empty())
		return names;
	if (!target.cluster) {
		problem = fmt::format("{} names nodes of a virtual cluster, and the ranks' agent is none of them "
				      "(give --node)",
				      option);
		return std::nullopt;
	}
	std::istringstream list(value);
	for (std::string name; std::getline(list, name, ',');) {
		if (!target.cluster->find(name) && !(toCome && isNodeToCome(target, name, *toCome))) {
			problem = fmt::format("{} {}: no node {} in the cluster at {} (nodes: {}){}", option, value,
					      name.empty() ? "''" : name, target.clusterDir, target.cluster->names(),
					      toCome ? ", nor a host made for it to join on" : "");
			return std::nullopt;
		}
		names.push_back(name);
	}
	return names;
}

std::optional<std::vector<std::string>> sparesOn(const RunOptions &run, const RankTarget &target,
						  std::string &problem, std::vector<ClusterNode> &toCome)
{
	if (!run.sparesOn.empty() && run.maxRanks.empty()) {
		problem = "--spares-on places the spare ranks of --max: give --max too";
		return std::nullopt;
	}
	return clusterNodes("--spares-on", run.sparesOn, target, problem, &toCome);
}

} // namespace

std::optional<RunPlace> runPlace(const GlobalOptions &options, const RunOptions &run, Failure &failure)
{
	std::optional<RankTarget> target = rankTarget(options, failure);
	if (!target)
		return std::nullopt;
	RunPlace place{std::move(*target), {}, {}, {}};
	std::string problem;
	std::optional<std::vector<std::string>> spareNodes = sparesOn(run, place.target, problem, place.nodesToCome);
	std::optional<std::vector<std::string>> activeNodes;
	if (spareNodes)
		activeNodes = clusterNodes("--active-on", run.activeOn, place.target, problem);
	if (!activeNodes) {
		failure = {kExitBadInput, problem};
		return std::nullopt;
	}
	place.spareNodes = std::move(*spareNodes);
	place.activeNodes = std::move(*activeNodes);
	return place;
}

} // namespace malleo::cli
