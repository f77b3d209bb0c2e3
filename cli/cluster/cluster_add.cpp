// SPDX-License-Identifier: Apache-2.0
// `malleo cluster add`: one more node for a virtual cluster that runs. It is named after the highest node so far,
// gets the configuration the cluster's nodes share (base-config.json) and one of the running nodes as its seed, as
// a machine that joins a real cluster would: the agents learn of it through the overlay, not from malleo. On a cluster
// of hosts (`cluster up --hosts`) it gets a host of its own, as the others have.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster_file.h"
#include "cluster_lock.h"
#include "cluster_starter.h"
#include "cluster_commands.h"
#include "cpu_load.h"
#include "netns_hosts.h"
#include "node_config.h"
#include "node_process.h"
#include "target.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

std::optional<std::vector<int>> checkCpus(const std::string &text, Failure &failure)
{
	std::optional<std::vector<int>> cpus = parseCpuList(text);
	if (!cpus || cpus->empty()) {
		failure = {kExitBadInput,
			   fmt::format("--cpus '{}': expected CPU numbers and ranges, e.g. 1 or 0-1", text)};
		return std::nullopt;
	}
	const std::vector<int> usable = usableCpus();
	for (int cpu : *cpus)
		if (std::find(usable.begin(), usable.end(), cpu) == usable.end()) {
			failure = {kExitBadInput, fmt::format("--cpus '{}': CPU {} is not one this process may run on ({})",
							      text, cpu, fmt::join(usable, ","))};
			return std::nullopt;
		}
	return cpus;
}

// The highest K of the names nK, so the new node is n<K+1>: a name never comes back, even after its node left, so
// event logs and `--node` never mix two nodes.
unsigned highestIndex(const ClusterFile &cluster)
{
	unsigned highest = 0;
	for (const ClusterNode &node : cluster.nodes)
		if (std::optional<unsigned> index = nodeIndex(node.name))
			highest = std::max(highest, *index);
	return highest;
}

// What the cluster's nodes share: base-config.json as `cluster up` wrote it; for a cluster started before that file
// existed, the first node's config.json less the keys the cluster decides per node.
std::optional<nlohmann::json> clusterBase(const std::string &dir, const ClusterFile &cluster, Failure &failure)
{
	if (fs::exists(baseConfigPath(dir)))
		return readJsonObject(baseConfigPath(dir), "the cluster's configuration", failure);
	std::optional<nlohmann::json> config =
		readJsonObject(cluster.nodes.front().runDir + "/config.json", "the cluster's configuration", failure);
	if (config)
		eraseClusterKeys(*config);
	return config;
}

// `hint` as for `cluster up`: --cluster-dir DIR when the next commands need it to find this cluster.
void printNode(const std::string &dir, const ClusterNode &node, const ClusterNode &seed, bool json,
	       const std::string &hint)
{
	if (json) {
		nlohmann::json j = toJson(node);
		j["dir"] = dir;
		j["seed"] = seed.name;
		std::cout << j.dump(2) << '\n';
		return;
	}
	std::cout << fmt::format("{} joined the cluster in {} through {}\n", node.name, dir, seed.name);
	TextTable table({"NAME", "PID", "CPU", "ENDPOINT", "LOCAL"});
	table.alignRight(1);
	table.addRow({node.name, std::to_string(node.pid), fmt::format("{}", fmt::join(node.cpus, ",")), node.endpoint,
		      node.local});
	// One command a line, whole, as `cluster up` prints them: joined by `|` a pasted line was a pipeline whose
	// last stage drained the node just added.
	std::cout << table.render() << "next:\n"
		  << fmt::format("  malleo{} --node {} peers\n  malleo{} cluster status\n", hint, node.name, hint);
}

} // namespace

int clusterAddCommand(const GlobalOptions &options, const ClusterAddOptions &add)
{
	const std::string dir = fs::absolute(clusterDir(options)).lexically_normal().string();
	Failure failure;

	std::vector<int> cpus;
	if (add.cpus) {
		std::optional<std::vector<int>> checked = checkCpus(*add.cpus, failure);
		if (!checked)
			return report(failure);
		cpus = std::move(*checked);
	}
	std::optional<nlohmann::json> config;
	if (!add.config.empty() && !(config = readJsonObject(add.config, "--config", failure)))
		return report(failure);
	std::optional<std::string> malleod = findMalleod(failure);
	if (!malleod)
		return report(failure);

	std::unique_ptr<ClusterLock> lock = ClusterLock::acquire(dir, failure);
	if (!lock)
		return report(failure);
	std::optional<ClusterFile> cluster = readClusterFile(dir, failure);
	if (!cluster || cluster->nodes.empty()) {
		if (failure.line.empty())
			failure = {kExitFailed, fmt::format("no cluster is up in {} (start one with `malleo cluster up "
							    "--nodes K`)",
							    dir)};
		return report(failure);
	}
	// n1 unless it has left (drained, stopped): any node that runs knows the others through the overlay.
	auto seed = std::find_if(cluster->nodes.begin(), cluster->nodes.end(),
				 [](const ClusterNode &node) { return processRuns(node.pid, node.startTime); });
	if (seed == cluster->nodes.end())
		return report({kExitFailed, fmt::format("no node of the cluster in {} runs ({}), so none can be a "
							"new node's seed; start again with `malleo cluster down` and "
							"`malleo cluster up`",
							dir, cluster->names())});
	if (!config && !(config = clusterBase(dir, *cluster, failure)))
		return report(failure);

	NodeConfigInput input;
	input.base = std::move(*config);
	const unsigned index = highestIndex(*cluster) + 1;
	ClusterStarter starter(index, "", dir, *malleod, std::move(input), {});
	// A cluster of hosts gets one more host, the new node's.
	if (!cluster->nodes.front().host.empty()) {
		std::optional<HostNetwork> network = readHostNetwork(dir, failure);
		if (!network)
			return report(failure.line.empty() ? Failure{kExitFailed, fmt::format("the cluster in {} has hosts "
											"but no hosts.json",
											dir)}
							   : failure);
		starter.onHosts(std::move(*network));
	}
	if (std::optional<Failure> f = starter.add(*cluster, index, std::move(cpus), {seed->name + "@" + seed->endpoint})) {
		starter.rollback();
		f->line += fmt::format("; n{} is not part of the cluster", index);
		return report(*f);
	}
	printNode(dir, starter.cluster().nodes.back(), *seed, add.json,
		  options.clusterDir.empty() ? "" : " --cluster-dir " + shellWord(dir));
	return kExitOk;
}

} // namespace malleo::cli
