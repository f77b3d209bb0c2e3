// SPDX-License-Identifier: Apache-2.0
// `malleo cluster up`: K agents on this machine, each on its own CPU with its
// own run directory, joined through n1 as their one seed peer.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent_client.h"
#include "cluster_file.h"
#include "cluster_lock.h"
#include "commands.h"
#include "node_config.h"
#include "node_process.h"
#include "node_stop.h"
#include "target.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

constexpr double kReadyTimeout = 10.0;
constexpr double kRollbackGrace = 2.0;
constexpr auto kPollPeriod = std::chrono::milliseconds(50);

struct Launch {
	ClusterNode node;
	std::string logPath;
	bool ready = false;
};

std::string lastLogLine(const std::string &path)
{
	std::ifstream in(path);
	std::string line, last;
	while (std::getline(in, line))
		if (line.find_first_not_of(" \t\r") != std::string::npos)
			last = line;
	return last;
}

std::string logHint(const Launch &launch)
{
	std::string last = lastLogLine(launch.logPath);
	return last.empty() ? fmt::format("log: {}", launch.logPath)
			    : fmt::format("\"{}\"; log: {}", clip(last, 200), launch.logPath);
}

// Reads <run-dir>/agent.json once the agent has written it.
bool readAgentFile(Launch &launch)
{
	std::ifstream in(launch.node.runDir + "/agent.json");
	if (!in)
		return false;
	nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
	if (!j.is_object())
		return false;
	auto pid = j.find("pid");
	auto endpoint = j.find("endpoint");
	auto local = j.find("local");
	if (pid == j.end() || !pid->is_number_integer() || pid->get<long>() != launch.node.pid ||
	    endpoint == j.end() || !endpoint->is_string() || local == j.end() || !local->is_string())
		return false;
	launch.node.endpoint = endpoint->get<std::string>();
	launch.node.local = local->get<std::string>();
	return true;
}

// Waits until every launch is ready; fails on the first agent that dies or is late.
std::optional<Failure> waitReady(std::vector<Launch *> launches)
{
	const double deadline = steadyNow() + kReadyTimeout;
	for (;;) {
		bool waiting = false;
		for (Launch *l : launches) {
			if (l->ready)
				continue;
			if (readAgentFile(*l)) {
				l->ready = true;
				continue;
			}
			std::string ended = reapChild(static_cast<pid_t>(l->node.pid));
			if (!ended.empty() || !processRuns(l->node.pid, 0))
				return Failure{kExitFailed,
					       fmt::format("{} (pid {}) ended ({}) before it was ready: {}",
							   l->node.name, l->node.pid,
							   ended.empty() ? "ended" : ended, logHint(*l))};
			waiting = true;
		}
		if (!waiting)
			return std::nullopt;
		if (steadyNow() >= deadline) {
			for (Launch *l : launches)
				if (!l->ready)
					return Failure{kExitFailed,
						       fmt::format("{} (pid {}) wrote no {}/agent.json within {:.0f} s: {}",
								   l->node.name, l->node.pid, l->node.runDir,
								   kReadyTimeout, logHint(*l))};
		}
		std::this_thread::sleep_for(kPollPeriod);
	}
}

class ClusterStarter
{
public:
	ClusterStarter(const ClusterUpOptions &up, std::string dir, std::string malleod,
		       NodeConfigInput input, std::map<std::string, nlohmann::json> nodeFiles)
		: up_(up), dir_(std::move(dir)), malleod_(std::move(malleod)),
		  input_(std::move(input)), nodeFiles_(std::move(nodeFiles)), cpus_(usableCpus())
	{
	}

	std::optional<Failure> start();
	void rollback();
	const ClusterFile &cluster() const { return cluster_; }

private:
	std::optional<Failure> launch(unsigned index, const std::vector<std::string> &peers);
	std::optional<Failure> record();

	const ClusterUpOptions &up_;
	std::string dir_;
	std::string malleod_;
	NodeConfigInput input_;
	std::map<std::string, nlohmann::json> nodeFiles_;
	std::vector<int> cpus_;
	std::vector<Launch> launches_;
	ClusterFile cluster_;
};

std::optional<Failure> ClusterStarter::launch(unsigned index, const std::vector<std::string> &peers)
{
	Launch l;
	l.node.name = fmt::format("n{}", index);
	l.node.runDir = (fs::path(dir_) / l.node.name).string();
	l.node.cpus = {cpus_[(index - 1) % cpus_.size()]};
	l.logPath = l.node.runDir + "/malleod.log";

	std::error_code ec;
	fs::create_directories(l.node.runDir, ec);
	if (ec)
		return Failure{kExitFailed, fmt::format("cannot create {}: {}", l.node.runDir, ec.message())};
	// No node of this directory runs (checked before), so this is a leftover.
	fs::remove(l.node.runDir + "/agent.json", ec);

	NodeConfigInput input = input_;
	if (auto it = nodeFiles_.find(l.node.name); it != nodeFiles_.end())
		input.node = it->second;
	const std::string configPath = l.node.runDir + "/config.json";
	{
		std::ofstream out(configPath, std::ios::trunc);
		out << nodeConfig(input, l.node.name, peers, l.node.runDir).dump(2) << '\n';
		if (!out.flush())
			return Failure{kExitFailed, fmt::format("cannot write {}", configPath)};
	}

	std::vector<std::string> argv = {malleod_,   "--config", configPath,	      "--id",
					 l.node.name, "--listen", "tcp://127.0.0.1:*", "--run-dir",
					 l.node.runDir};
	for (const std::string &peer : peers)
		argv.insert(argv.end(), {"--peer", peer});
	if (!up_.logLevel.empty())
		argv.insert(argv.end(), {"--log-level", up_.logLevel});

	Failure failure;
	std::optional<pid_t> pid = spawnDetached(argv, l.node.cpus[0], l.logPath, failure);
	if (!pid)
		return failure;
	l.node.pid = *pid;
	l.node.startTime = processStartTime(*pid);
	launches_.push_back(std::move(l));
	return std::nullopt;
}

// Records the ready nodes at once, so that `cluster down` finds them even if
// we are interrupted before the last one is up.
std::optional<Failure> ClusterStarter::record()
{
	cluster_.nodes.clear();
	for (const Launch &l : launches_)
		if (l.ready)
			cluster_.nodes.push_back(l.node);
	return writeClusterFile(dir_, cluster_);
}

std::optional<Failure> ClusterStarter::start()
{
	launches_.reserve(up_.nodes);
	if (auto f = launch(1, {}))
		return f;
	if (auto f = waitReady({&launches_[0]}))
		return f;
	if (auto f = record())
		return f;

	const std::vector<std::string> seed = {launches_[0].node.endpoint};
	for (unsigned i = 2; i <= up_.nodes; ++i)
		if (auto f = launch(i, seed))
			return f;
	std::vector<Launch *> rest;
	for (std::size_t i = 1; i < launches_.size(); ++i)
		rest.push_back(&launches_[i]);
	std::optional<Failure> f = waitReady(rest);
	if (auto g = record(); g && !f)
		f = g;
	return f;
}

void ClusterStarter::rollback()
{
	std::vector<ClusterNode> nodes;
	for (const Launch &l : launches_)
		nodes.push_back(l.node);
	for (const NodeStop &stop : stopNodes(nodes, kRollbackGrace))
		if (stop.result != "stopped" && stop.result != "not_running")
			std::cerr << "malleo: " << describe(stop) << '\n';
	std::error_code ec;
	fs::remove(clusterFilePath(dir_), ec);
}

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

void printCluster(const std::string &dir, const ClusterFile &cluster, bool json)
{
	if (json) {
		nlohmann::json j = toJson(cluster);
		j["dir"] = dir;
		std::cout << j.dump(2) << '\n';
		return;
	}
	std::cout << fmt::format("cluster of {} node{} up in {}\n", cluster.nodes.size(),
				 cluster.nodes.size() == 1 ? "" : "s", dir);
	TextTable table({"NAME", "PID", "CPU", "ENDPOINT", "LOCAL"});
	table.alignRight(1);
	for (const ClusterNode &node : cluster.nodes)
		table.addRow({node.name, std::to_string(node.pid), fmt::format("{}", fmt::join(node.cpus, ",")),
			      node.endpoint, node.local});
	std::cout << table.render()
		  << "next: malleo --node n1 status | malleo top | malleo cluster down\n";
}

} // namespace

int clusterUpCommand(const GlobalOptions &options, const ClusterUpOptions &up)
{
	const std::string dir = fs::absolute(clusterDir(options)).lexically_normal().string();
	Failure failure;

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
	std::optional<std::string> malleod = findMalleod(failure);
	if (!malleod)
		return report(failure);

	std::unique_ptr<ClusterLock> lock = ClusterLock::acquire(dir, failure);
	if (!lock)
		return report(failure);
	if (std::optional<ClusterFile> existing = readClusterFile(dir, failure)) {
		std::size_t running = 0;
		for (const ClusterNode &node : existing->nodes)
			running += processRuns(node.pid, node.startTime);
		if (running > 0)
			return report({kExitFailed, fmt::format("a cluster is already up in {} ({} of {} nodes "
								"running); stop it first with `malleo cluster down`",
								dir, running, existing->nodes.size())});
	} else if (!failure.line.empty()) {
		return report(failure);
	}

	ClusterStarter starter(up, dir, *malleod, std::move(input), std::move(*nodeFiles));
	if (std::optional<Failure> f = starter.start()) {
		starter.rollback();
		f->line += "; stopped the nodes already started";
		return report(*f);
	}
	printCluster(dir, starter.cluster(), up.json);
	return kExitOk;
}

} // namespace malleo::cli
