// SPDX-License-Identifier: Apache-2.0
// `malleo cluster up`: checks the flags and files, takes the cluster directory,
// refuses a cluster that still runs, then starts the nodes (cluster_starter.h).
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster_file.h"
#include "cluster_lock.h"
#include "cluster_starter.h"
#include "cluster_commands.h"
#include "host_cpu_slice.h"
#include "netns_hosts.h"
#include "node_config.h"
#include "node_process.h"
#include "target.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

std::optional<std::map<std::string, nlohmann::json>> readNodeFiles(const ClusterUpOptions &up,
								   Failure &failure)
{
	std::map<std::string, nlohmann::json> files;
	for (const std::string &spec : up.nodeConfigs) {
		auto eq = spec.find('=');
		std::string name = spec.substr(0, eq);
		unsigned index = 0;
		bool known = name.size() > 1 && name.size() <= 7 && name[0] == 'n' &&
			     name.find_first_not_of("0123456789", 1) == std::string::npos &&
			     (index = std::stoul(name.substr(1))) >= 1 && index <= up.nodes;
		if (eq == std::string::npos || eq + 1 == spec.size()) {
			failure = {kExitBadInput, fmt::format("--node-config '{}': expected NAME=FILE, e.g. n2=slow.json", spec)};
			return std::nullopt;
		}
		if (!known) {
			failure = {kExitBadInput, fmt::format("--node-config '{}': no node '{}' in a cluster of "
							      "{} (names are n1..n{})",
							      spec, name, up.nodes, up.nodes)};
			return std::nullopt;
		}
		std::optional<nlohmann::json> j =
			readJsonObject(spec.substr(eq + 1), "--node-config " + name + ":", failure);
		if (!j)
			return std::nullopt;
		mergeInto(files[name], *j);
	}
	return files;
}

// `hint` is the global option the next commands need to find this cluster again (--cluster-dir DIR), if any.
void printCluster(const std::string &dir, const ClusterFile &cluster, bool json, const std::string &hint)
{
	if (json) {
		nlohmann::json j = toJson(cluster);
		j["dir"] = dir;
		std::cout << j.dump(2) << '\n';
		return;
	}
	std::cout << fmt::format("cluster of {} node{} up in {}\n", cluster.nodes.size(),
				 cluster.nodes.size() == 1 ? "" : "s", dir);
	const bool hosts = !cluster.nodes.empty() && !cluster.nodes.front().host.empty();
	std::vector<std::string> header = {"NAME", "PID", "CPU", "ENDPOINT", "LOCAL"};
	if (hosts)
		header.insert(header.begin() + 1, "HOST");
	TextTable table(header);
	table.alignRight(hosts ? 2 : 1);
	for (const ClusterNode &node : cluster.nodes) {
		std::vector<std::string> row = {node.name, std::to_string(node.pid),
						fmt::format("{}", fmt::join(node.cpus, ",")), node.endpoint, node.local};
		if (hosts)
			row.insert(row.begin() + 1, node.host);
		table.addRow(row);
	}
	// One command a line, whole, so that a line pasted into a shell runs it (with `|` between them it pipes).
	std::cout << table.render() << "next:\n";
	for (const char *next : {"--node n1 status", "top", "cluster down"})
		std::cout << fmt::format("  malleo{} {}\n", hint, next);
}

// The options as given, checked against each other and against what this machine can do; --hosts K alone means K
// nodes too.
std::optional<Failure> checkUpOptions(const ClusterUpOptions &given, ClusterUpOptions &up)
{
	if (given.nodes == 0 && given.hosts == 0)
		return Failure{kExitBadInput, "how many nodes? give --nodes K (agents on this host) or --hosts K "
					      "(each on a host of its own)"};
	if (given.hosts > 0)
		if (std::optional<std::string> why = namespacesUnavailable())
			return Failure{kExitFailed, *why};
	if (given.hostCpuQuota > 0 && given.hosts == 0)
		return Failure{kExitBadInput, "--host-cpu-quota: only with --hosts K (a quota is a host's)"};
	if (given.hostCpuQuota > 0)
		if (std::optional<std::string> why = cpuSlicesUnavailable())
			return Failure{kExitFailed, *why};
	up = given;
	if (up.nodes == 0)
		up.nodes = up.hosts;
	if (up.hosts > 0 && up.nodes > up.hosts)
		return Failure{kExitBadInput, fmt::format("--nodes {} --hosts {}: a node per host at most (node nI runs on "
							  "host I)",
							  up.nodes, up.hosts)};
	return std::nullopt;
}

// A failure when a cluster of DIR still has a node running (or its file cannot be read).
std::optional<Failure> clusterStillUp(const std::string &dir)
{
	Failure failure;
	if (std::optional<ClusterFile> existing = readClusterFile(dir, failure)) {
		std::size_t running = 0;
		for (const ClusterNode &node : existing->nodes)
			running += processRuns(node.pid, node.startTime);
		if (running > 0)
			return Failure{kExitFailed, fmt::format("a cluster is already up in {} ({} of {} nodes "
								"running); stop it first with `malleo cluster down`",
								dir, running, existing->nodes.size())};
	} else if (!failure.line.empty()) {
		return failure;
	}
	return std::nullopt;
}

} // namespace

int clusterUpCommand(const GlobalOptions &options, const ClusterUpOptions &given)
{
	const std::string dir = fs::absolute(clusterDir(options)).lexically_normal().string();
	Failure failure;
	ClusterUpOptions up;
	if (std::optional<Failure> bad = checkUpOptions(given, up))
		return report(*bad);

	NodeConfigInput input;
	if (!up.config.empty()) {
		std::optional<nlohmann::json> base = readJsonObject(up.config, "--config", failure);
		if (!base)
			return report(failure);
		input.base = std::move(*base);
	}
	for (auto [key, value] : {std::pair{"profiling", &up.profiling}, std::pair{"protocol", &up.protocol},
				  std::pair{"decision", &up.decision}})
		if (!value->empty())
			input.modules[key] = *value;
	std::optional<std::map<std::string, nlohmann::json>> nodeFiles = readNodeFiles(up, failure);
	if (!nodeFiles)
		return report(failure);
	if (std::optional<Failure> bad = checkNodeConfigs(input, up.config, *nodeFiles))
		return report(*bad);
	std::optional<std::string> malleod = findMalleod(failure);
	if (!malleod)
		return report(failure);

	std::unique_ptr<ClusterLock> lock = ClusterLock::acquire(dir, failure);
	if (!lock)
		return report(failure);
	if (std::optional<Failure> running = clusterStillUp(dir))
		return report(*running);

	// Namespaces a crashed `cluster up` or `cluster down` left: no node of this directory runs, so none is used.
	if (std::vector<std::string> left = removeHostNetwork(dir); !left.empty())
		return report({kExitFailed, fmt::format("cannot remove the hosts an earlier cluster left in {}: {}", dir,
							left.front())});
	ClusterStarter starter(up.nodes, up.logLevel, dir, *malleod, std::move(input), std::move(*nodeFiles));
	if (up.hosts > 0) {
		std::optional<HostNetwork> network = makeHostNetwork(dir, failure, up.hostCpuQuota);
		if (!network)
			return report(failure);
		// Every host now, those of nodes to come too: an MPI job reaches only the hosts of the hostfile it
		// started with (Open MPI cannot add one to a running job).
		for (unsigned i = 1; i <= up.hosts; ++i)
			if (!addHost(*network, fmt::format("n{}", i), i, failure)) {
				for (const std::string &left : removeHostNetwork(dir))
					std::cerr << "malleo: " << left << '\n';
				return report(failure);
			}
		starter.onHosts(std::move(*network));
	}
	if (std::optional<Failure> f = starter.start()) {
		starter.rollback();
		f->line += "; stopped the nodes already started";
		if (up.hosts > 0)
			for (const std::string &left : removeHostNetwork(dir))
				std::cerr << "malleo: " << left << '\n';
		return report(*f);
	}
	printCluster(dir, starter.cluster(), up.json,
		     options.clusterDir.empty() ? "" : " --cluster-dir " + shellWord(dir));
	return kExitOk;
}

} // namespace malleo::cli
