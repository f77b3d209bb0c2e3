// SPDX-License-Identifier: Apache-2.0
#include "target.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <unistd.h>

#include <malleo/run_dir.h>

#include "cluster_file.h"

namespace malleo::cli {

namespace {

std::optional<Target> nodeTarget(const GlobalOptions &options, Failure &failure)
{
	std::optional<ClusterNode> node = clusterNode(options, failure);
	if (!node)
		return std::nullopt;
	return Target{node->name, localEndpoint(*node)};
}

std::optional<Target> explicitTarget(const GlobalOptions &options, Failure &failure)
{
	if (!options.agent.empty() && !options.node.empty()) {
		failure = {kExitBadInput, "give --agent or --node, not both"};
		return std::nullopt;
	}
	if (!options.agent.empty())
		return Target{options.agent, options.agent};
	if (!options.node.empty())
		return nodeTarget(options, failure);
	if (const char *env = std::getenv("MALLEO_AGENT"); env && *env)
		return Target{env, env};
	failure = {};
	return std::nullopt;
}

Failure noDefaultAgent()
{
	return {kExitBadInput, "no default agent for a user other than root without XDG_RUNTIME_DIR: "
			       "give --agent, --node or MALLEO_AGENT"};
}

} // namespace

std::string clusterDir(const GlobalOptions &options)
{
	if (!options.clusterDir.empty())
		return options.clusterDir;
	if (const char *env = std::getenv("MALLEO_CLUSTER_DIR"); env && *env)
		return env;
	return fmt::format("/tmp/malleo-cluster-{}", geteuid());
}

std::optional<ClusterNode> clusterNode(const GlobalOptions &options, Failure &failure)
{
	const std::string dir = clusterDir(options);
	std::optional<ClusterFile> cluster = readClusterFile(dir, failure);
	if (!cluster) {
		if (failure.line.empty())
			failure = {kExitFailed,
				   fmt::format("--node {}: no virtual cluster is up in {} (start one with "
					       "`malleo cluster up --nodes K`, or give --cluster-dir)",
					       options.node, dir)};
		return std::nullopt;
	}
	const ClusterNode *node = cluster->find(options.node);
	if (!node) {
		failure = {kExitBadInput, fmt::format("--node {}: no such node in the cluster at {} "
						      "(nodes: {})",
						      options.node, dir, cluster->names())};
		return std::nullopt;
	}
	return *node;
}

std::optional<Target> singleTarget(const GlobalOptions &options, Failure &failure)
{
	failure = {};
	if (std::optional<Target> target = explicitTarget(options, failure))
		return target;
	if (!failure.line.empty())
		return std::nullopt;
	// On a machine that runs no system agent but a virtual cluster, the
	// cluster's first node is the agent meant: `malleo status` just works.
	const std::string fallback = defaultAgentEndpoint();
	std::error_code ec;
	if (fallback.empty() || !std::filesystem::exists(defaultAgentSocket(), ec)) {
		Failure ignored;
		std::optional<ClusterFile> cluster = readClusterFile(clusterDir(options), ignored);
		if (cluster && !cluster->nodes.empty())
			return Target{cluster->nodes.front().name, cluster->nodes.front().local};
	}
	if (fallback.empty()) {
		failure = noDefaultAgent();
		return std::nullopt;
	}
	return Target{fallback, fallback};
}

std::optional<std::vector<Target>> watchTargets(const GlobalOptions &options, Failure &failure)
{
	failure = {};
	if (std::optional<Target> target = explicitTarget(options, failure))
		return std::vector<Target>{*target};
	if (!failure.line.empty())
		return std::nullopt;

	std::optional<ClusterFile> cluster = readClusterFile(clusterDir(options), failure);
	if (!cluster) {
		if (!failure.line.empty())
			return std::nullopt;
		const std::string fallback = defaultAgentEndpoint();
		if (fallback.empty()) {
			failure = noDefaultAgent();
			return std::nullopt;
		}
		return std::vector<Target>{{fallback, fallback}};
	}
	std::vector<Target> targets;
	for (const ClusterNode &node : cluster->nodes)
		targets.push_back({node.name, localEndpoint(node)});
	return targets;
}

std::unique_ptr<AgentClient> connectSingleTarget(zmq::context_t &context, const GlobalOptions &options,
						 Failure &failure)
{
	std::optional<Target> target = singleTarget(options, failure);
	if (!target)
		return nullptr;
	return AgentClient::create(context, target->endpoint, options.timeout, failure);
}

} // namespace malleo::cli
