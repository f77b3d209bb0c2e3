// SPDX-License-Identifier: Apache-2.0
// `malleo load`: real CPU load on a node of the virtual cluster (its CPUs in
// cluster.json) or on CPUs of this machine, and `malleo load --stop`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster_file.h"
#include "cluster_lock.h"
#include "cluster_commands.h"
#include "cpu_load.h"
#include "human_units.h"
#include "netns_hosts.h"
#include "node_process.h"
#include "target.h"

namespace malleo::cli {

namespace {

// More busy processes than this on one machine is a typo, not a load.
constexpr long kMaxBurners = 1024;
// A year: a deadline far enough to mean "long", near enough to stay a number of nanoseconds.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;

struct Place {
	std::string node; // empty: this machine
	std::string dir;  // where load.json goes
	std::vector<int> cpus;
	std::optional<NetHost> host; // a node on a host that is a CPU slice: the load runs on the host, in its slice
};

std::string stopHint(const std::string &node)
{
	return node.empty() ? "`malleo load --stop`"
			    : fmt::format("`malleo load --stop --node {}`", node);
}

std::optional<unsigned> burnerCount(const LoadOptions &load, std::size_t cpus, Failure &failure)
{
	if (!load.cpus)
		return static_cast<unsigned>(cpus);
	std::size_t used = 0;
	long value = 0;
	try {
		value = std::stol(*load.cpus, &used);
	} catch (const std::exception &) {
		used = 0;
	}
	if (used == 0 || used != load.cpus->size() || value < 1 || value > kMaxBurners) {
		failure = {
		    kExitBadInput,
		    fmt::format("--cpus {}: expected a number of busy processes from 1 to {}",
				*load.cpus, kMaxBurners)};
		return std::nullopt;
	}
	return static_cast<unsigned>(value);
}

// nullopt in the result: until --stop.
std::optional<std::optional<double>> loadSeconds(const LoadOptions &load, Failure &failure)
{
	if (!load.seconds)
		return std::optional<double>{};
	std::size_t used = 0;
	double value = 0;
	try {
		value = std::stod(*load.seconds, &used);
	} catch (const std::exception &) {
		used = 0;
	}
	if (used == 0 || used != load.seconds->size() || !std::isfinite(value) || value <= 0 ||
	    value > kMaxSeconds) {
		failure = {kExitBadInput,
			   fmt::format("--for {}: expected seconds above 0 (at most a year)",
				       *load.seconds)};
		return std::nullopt;
	}
	return std::optional<double>{value};
}

std::optional<Place> place(const GlobalOptions &options, const LoadOptions &load, Failure &failure)
{
	if (!options.agent.empty()) {
		failure = {
		    kExitBadInput,
		    "load works on a node of the virtual cluster (--node) or on CPUs of this "
		    "machine (--cpu-list), not on an agent's endpoint (--agent)"};
		return std::nullopt;
	}
	if (options.node.empty() == !load.cpuList.has_value()) {
		failure = {
		    kExitBadInput,
		    "give either --node NODE (its CPUs in the virtual cluster) or --cpu-list LIST "
		    "(CPUs of this machine, e.g. 0,1 or 0-1)"};
		return std::nullopt;
	}
	if (!options.node.empty()) {
		std::optional<ClusterNode> node = clusterNode(options, failure);
		if (!node)
			return std::nullopt;
		if (node->cpus.empty() || node->runDir.empty()) {
			failure = {kExitFailed,
				   fmt::format(
				       "--node {}: cluster.json names no CPUs or run directory for "
				       "it; start the cluster again with `malleo cluster up`",
				       node->name)};
			return std::nullopt;
		}
		Place where{node->name, node->runDir, node->cpus, std::nullopt};
		// On a CPU slice the node is the slice: a load beside it, outside, would not be the node's.
		Failure none;
		if (std::optional<HostNetwork> network = readHostNetwork(clusterDir(options), none))
			if (const NetHost *host = network->ofNode(node->name); host && !host->cgroup.empty())
				where.host = *host;
		return where;
	}
	std::optional<std::vector<int>> cpus = parseCpuList(*load.cpuList);
	if (!cpus) {
		failure = {
		    kExitBadInput,
		    fmt::format("--cpu-list '{}': expected CPU numbers and ranges, e.g. 0,1 or 0-1",
				*load.cpuList)};
		return std::nullopt;
	}
	const std::vector<int> usable = usableCpus();
	for (int cpu : *cpus)
		if (std::find(usable.begin(), usable.end(), cpu) == usable.end()) {
			failure = {
			    kExitBadInput,
			    fmt::format("--cpu-list '{}': CPU {} is not one this process may run "
					"on ({})",
					*load.cpuList, cpu, fmt::join(usable, ","))};
			return std::nullopt;
		}
	return Place{"", clusterDir(options), *cpus, std::nullopt};
}

void printStarted(const LoadRecord &record, const std::string &dir, bool json)
{
	if (json) {
		nlohmann::json j = toJson(record);
		j["file"] = loadFilePath(dir);
		std::cout << j.dump(2) << '\n';
		return;
	}
	const std::size_t n = record.burners.size();
	std::string pids;
	for (const Burner &b : record.burners)
		pids += (pids.empty() ? "" : ", ") + std::to_string(b.pid);
	std::string until = fmt::format("until {}", stopHint(record.node));
	if (record.end) {
		using namespace std::chrono;
		auto end = system_clock::time_point(
		    duration_cast<system_clock::duration>(duration<double>(*record.end)));
		until = fmt::format("for {}, until {}; end it sooner with {}",
				    formatDuration(*record.end - record.start), formatClock(end),
				    stopHint(record.node));
	}
	std::cout << fmt::format("{}: {} busy process{} on CPU{} {} {} (pid{} {})\n",
				 record.node.empty() ? "this machine" : record.node, n,
				 n == 1 ? "" : "es", record.cpus.size() == 1 ? "" : "s",
				 fmt::join(record.cpus, ","), until, n == 1 ? "" : "s", pids);
}

int startCommand(const GlobalOptions &options, const LoadOptions &load)
{
	Failure failure;
	std::optional<Place> where = place(options, load, failure);
	if (!where)
		return report(failure);
	std::optional<unsigned> count = burnerCount(load, where->cpus.size(), failure);
	if (!count)
		return report(failure);
	std::optional<std::optional<double>> seconds = loadSeconds(load, failure);
	if (!seconds)
		return report(failure);

	std::unique_ptr<ClusterLock> lock = ClusterLock::acquire(clusterDir(options), failure);
	if (!lock)
		return report(failure);
	if (std::optional<LoadRecord> old = readLoad(where->dir, failure); old && loadRuns(*old))
		return report(
		    {kExitFailed,
		     fmt::format("{} already carries a load (CPUs {}); end it first with {}",
				 where->node.empty() ? "this machine" : where->node,
				 fmt::join(old->cpus, ","), stopHint(where->node))});
	std::optional<HostEntry> entry;
	if (where->host) {
		entry.emplace(*where->host);
		if (!entry->opened())
			return report({kExitFailed, entry->openError()});
	}
	std::optional<LoadRecord> record = startLoad(where->dir, where->node, where->cpus, *count, *seconds, failure,
						     entry ? &*entry : nullptr);
	if (!record)
		return report(failure);
	printStarted(*record, where->dir, load.json);
	return kExitOk;
}

int stopCommand(const GlobalOptions &options, const LoadOptions &load)
{
	if (load.cpus || load.seconds || load.cpuList)
		return report(
		    {kExitBadInput,
		     "--stop takes only --node (default: every load of the cluster and of "
		     "this machine)"});
	Failure failure;
	std::vector<std::string> dirs;
	const std::string dir = clusterDir(options);
	if (!options.node.empty()) {
		std::optional<ClusterNode> node = clusterNode(options, failure);
		if (!node)
			return report(failure);
		dirs.push_back(node->runDir);
	} else {
		if (std::optional<ClusterFile> cluster = readClusterFile(dir, failure))
			for (const ClusterNode &node : cluster->nodes)
				dirs.push_back(node.runDir);
		else if (!failure.line.empty())
			return report(failure);
		dirs.push_back(dir);
	}

	std::unique_ptr<ClusterLock> lock;
	if (std::filesystem::exists(dir) && !(lock = ClusterLock::acquire(dir, failure)))
		return report(failure);
	std::vector<LoadStop> stops;
	bool survivors = false;
	for (const std::string &d : dirs) {
		std::optional<LoadStop> stop = stopLoad(d, failure);
		if (!stop && !failure.line.empty())
			return report(failure);
		if (!stop)
			continue;
		for (const NodeStop &s : stop->burners)
			survivors |= s.result == "survived";
		stops.push_back(std::move(*stop));
	}

	if (load.json) {
		nlohmann::json loads = nlohmann::json::array();
		for (const LoadStop &s : stops)
			loads.push_back(toJson(s));
		std::cout << nlohmann::json({{"dir", dir}, {"loads", loads}}).dump(2) << '\n';
	} else if (stops.empty()) {
		std::cout << (options.node.empty()
				  ? fmt::format("no load to stop in {}\n", dir)
				  : fmt::format("{}: no load to stop\n", options.node));
	} else {
		for (const LoadStop &s : stops)
			std::cout << describe(s) << '\n';
	}
	if (survivors)
		return report({kExitFailed, "a busy process survived SIGKILL; its load.json is "
					    "kept, retry `malleo load --stop`"});
	return kExitOk;
}

} // namespace

int loadCommand(const GlobalOptions &options, const LoadOptions &load)
{
	return load.stop ? stopCommand(options, load) : startCommand(options, load);
}

} // namespace malleo::cli
