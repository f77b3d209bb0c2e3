// SPDX-License-Identifier: Apache-2.0
#include "cluster_starter.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "agent_client.h"
#include "node_keys.h"
#include "node_process.h"
#include "node_stop.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

constexpr double kReadyTimeout = 10.0;
constexpr double kRollbackGrace = 2.0;
constexpr auto kPollPeriod = std::chrono::milliseconds(50);

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

} // namespace

ClusterStarter::ClusterStarter(unsigned nodes, std::string logLevel, std::string dir,
			       std::string malleod, NodeConfigInput input,
			       std::map<std::string, nlohmann::json> nodeFiles)
	: nodes_(nodes), logLevel_(std::move(logLevel)), dir_(std::move(dir)),
	  malleod_(std::move(malleod)), input_(std::move(input)), nodeFiles_(std::move(nodeFiles))
{
}

std::optional<Failure> ClusterStarter::launch(unsigned index, const std::vector<std::string> &peers,
					      std::vector<int> cpus)
{
	Launch l;
	l.node.name = fmt::format("n{}", index);
	l.node.runDir = (fs::path(dir_) / l.node.name).string();
	l.node.cpus = cpus.empty() ? defaultNodeCpus(index) : std::move(cpus);
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
	std::optional<NetHost> host;
	if (network_) {
		Failure failure;
		if (!(host = addHost(*network_, l.node.name, index, failure)))
			return failure;
		l.node.host = host->name;
		l.node.address = host->address;
	}
	const std::string listen = fmt::format("tcp://{}:*", host ? host->address : "127.0.0.1");
	const std::string configPath = l.node.runDir + "/config.json";
	{
		nlohmann::json config = nodeConfig(input, l.node.name, peers, l.node.runDir);
		config["agent"]["listen"] = listen; // what the command line says too: the file tells the truth
		// A host that is a CPU slice is measured as one, unless the configuration names a group itself.
		const nlohmann::json modules = config.value("modules", nlohmann::json::object());
		const bool hostProfiling = !modules.is_object() || modules.value("profiling", "host") == "host";
		const bool groupNamed = config.contains("host") && config["host"].is_object() &&
					config["host"].contains("cgroup");
		if (host && !host->cgroup.empty() && hostProfiling && !groupNamed)
			config["host"]["cgroup"] = host->cgroup;
		// Authenticated unless the configuration says otherwise (security.plain, or keys of its own): a key pair
		// per node in <dir>/keys, every node's .pub allowed in (docs/deployment.md).
		if (!config.contains("security")) {
			const std::string keys = (fs::absolute(dir_) / "keys").string();
			Failure failure;
			std::optional<NodeKeyFiles> files = ensureNodeKeys(keys, l.node.name, failure);
			if (!files)
				return failure;
			config["security"] = {{"secret_key", files->secretFile}, {"allowed_keys", keys}};
		}
		std::ofstream out(configPath, std::ios::trunc);
		out << config.dump(2) << '\n';
		if (!out.flush())
			return Failure{kExitFailed, fmt::format("cannot write {}", configPath)};
	}
	std::vector<std::string> argv = {malleod_, "--config", configPath,    "--id",
					 l.node.name, "--listen", listen, "--run-dir",
					 l.node.runDir};
	for (const std::string &peer : peers)
		argv.insert(argv.end(), {"--peer", peer});
	if (!logLevel_.empty())
		argv.insert(argv.end(), {"--log-level", logLevel_});

	Failure failure;
	std::optional<HostEntry> entry;
	if (host) {
		entry.emplace(*host);
		if (!entry->opened())
			return Failure{kExitFailed, entry->openError()};
	}
	std::optional<pid_t> pid = spawnDetached(argv, l.node.cpus, l.logPath, failure, entry ? &*entry : nullptr);
	if (!pid)
		return failure;
	l.node.pid = *pid;
	l.node.startTime = processStartTime(*pid);
	launches_.push_back(std::move(l));
	return std::nullopt;
}

// Records every node started so far, ready or not, so that `cluster down`
// finds them all even if we are interrupted before the last one is up.
std::optional<Failure> ClusterStarter::record()
{
	cluster_.nodes = kept_;
	for (const Launch &l : launches_)
		cluster_.nodes.push_back(l.node);
	return writeClusterFile(dir_, cluster_);
}

std::optional<Failure> ClusterStarter::start()
{
	// What every node shares, kept for `malleo cluster add` to give a later node the same.
	if (auto f = writeBaseConfig(dir_, input_))
		return f;
	launches_.reserve(nodes_);
	if (auto f = launch(1, {}))
		return f;
	if (auto f = record())
		return f;
	if (auto f = waitReady({&launches_[0]}))
		return f;

	// NODE@ENDPOINT: with CURVE, the seed's public key is its node's.
	const std::vector<std::string> seed = {launches_[0].node.name + "@" + launches_[0].node.endpoint};
	for (unsigned i = 2; i <= nodes_; ++i)
		if (auto f = launch(i, seed))
			return f;
	if (auto f = record())
		return f;
	std::vector<Launch *> rest;
	for (std::size_t i = 1; i < launches_.size(); ++i)
		rest.push_back(&launches_[i]);
	std::optional<Failure> f = waitReady(rest);
	if (auto g = record(); g && !f)
		f = g;
	return f;
}

std::optional<Failure> ClusterStarter::add(const ClusterFile &existing, unsigned index, std::vector<int> cpus,
					   const std::vector<std::string> &seeds)
{
	kept_ = existing.nodes;
	if (auto f = launch(index, seeds, std::move(cpus)))
		return f;
	if (auto f = record())
		return f;
	std::optional<Failure> f = waitReady({&launches_.back()});
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
	if (!kept_.empty()) {
		cluster_.nodes = kept_;
		if (std::optional<Failure> f = writeClusterFile(dir_, cluster_))
			std::cerr << "malleo: " << f->line << '\n';
		return;
	}
	std::error_code ec;
	fs::remove(clusterFilePath(dir_), ec);
}

} // namespace malleo::cli
