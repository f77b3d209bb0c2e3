// SPDX-License-Identifier: Apache-2.0
#include "plan/nodes.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace malleo::pcm {

namespace {

bool parseCpu(const std::string &text, int &cpu)
{
	if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
		return false;
	cpu = std::atoi(text.c_str());
	return true;
}

// "name=value;name=value" -> pairs; an empty text is no pairs.
std::string parsePairs(const char *variable, const std::string &text,
		       std::vector<std::pair<std::string, std::string>> &out)
{
	std::size_t start = 0;
	while (start < text.size()) {
		auto end = text.find(';', start);
		if (end == std::string::npos)
			end = text.size();
		const std::string entry = text.substr(start, end - start);
		const auto equals = entry.find('=');
		if (equals == std::string::npos || equals == 0 || equals + 1 == entry.size())
			return std::string(variable) + ": '" + entry + "' is not name=value";
		const std::string name = entry.substr(0, equals);
		for (const auto &[seen, value] : out)
			if (seen == name)
				return std::string(variable) + ": node '" + name + "' named twice";
		out.emplace_back(name, entry.substr(equals + 1));
		start = end + 1;
	}
	return {};
}

} // namespace

std::string parseCpuList(const std::string &text, std::vector<int> &out)
{
	std::vector<int> cpus;
	std::size_t start = 0;
	if (text.empty())
		return "empty CPU list";
	while (start <= text.size()) {
		auto end = text.find(',', start);
		if (end == std::string::npos)
			end = text.size();
		const std::string range = text.substr(start, end - start);
		const auto dash = range.find('-');
		int first = 0, last = 0;
		if (!parseCpu(range.substr(0, dash), first) ||
		    !parseCpu(dash == std::string::npos ? range : range.substr(dash + 1), last) || last < first)
			return "'" + text + "' is not a CPU list (like 0-3,8)";
		for (int cpu = first; cpu <= last; ++cpu)
			cpus.push_back(cpu);
		if (end == text.size())
			break;
		start = end + 1;
	}
	std::sort(cpus.begin(), cpus.end());
	cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
	out = std::move(cpus);
	return {};
}

std::string cpuListText(const std::vector<int> &cpus)
{
	std::string text;
	for (int cpu : cpus)
		text += (text.empty() ? "" : ",") + std::to_string(cpu);
	return text;
}

std::string parseNodeMap(const std::string &nodes, const std::string &agents, const std::string &cluster_dir,
			 NodeMap &out)
{
	NodeMap map;
	std::vector<std::pair<std::string, std::string>> pairs;
	if (auto error = parsePairs("MALLEO_NODES", nodes, pairs); !error.empty())
		return error;
	for (const auto &[name, cpus] : pairs) {
		NodeInfo info;
		if (auto error = parseCpuList(cpus, info.cpus); !error.empty())
			return "MALLEO_NODES: node '" + name + "': " + error;
		if (!cluster_dir.empty())
			info.agent = "ipc://" + cluster_dir + "/" + name + "/agent.sock";
		map.nodes[name] = info;
	}
	pairs.clear();
	if (auto error = parsePairs("MALLEO_NODE_AGENTS", agents, pairs); !error.empty())
		return error;
	for (const auto &[name, endpoint] : pairs) {
		if (endpoint.rfind("ipc://", 0) != 0 && endpoint.rfind("tcp://", 0) != 0)
			return "MALLEO_NODE_AGENTS: node '" + name + "': '" + endpoint +
			       "' is not an ipc:// or tcp:// endpoint";
		map.nodes[name].agent = endpoint;
	}
	map.described = !map.nodes.empty();
	map.clusterDir = cluster_dir;
	out = std::move(map);
	return {};
}

std::string parseNodeHosts(const std::string &hosts, const std::string &launch_hosts, NodeMap &map)
{
	std::istringstream list(launch_hosts);
	for (std::string host; std::getline(list, host, ',');)
		if (!host.empty())
			map.launchHosts.push_back(host);
	std::vector<std::pair<std::string, std::string>> pairs;
	if (auto error = parsePairs("MALLEO_NODE_HOSTS", hosts, pairs); !error.empty())
		return error;
	for (const auto &[name, host] : pairs) {
		if (host.empty() || host.find_first_of(" \t/") != std::string::npos)
			return "MALLEO_NODE_HOSTS: node '" + name + "': '" + host + "' is not a host name";
		map.nodes[name].host = host;
	}
	map.described = map.described || !pairs.empty();
	return {};
}

std::string addClusterNodes(const std::string &cluster_json, NodeMap &map)
{
	if (!map.described || map.clusterDir.empty())
		return {};
	const std::string where = map.clusterDir + "/cluster.json";
	const nlohmann::json cluster = nlohmann::json::parse(cluster_json, nullptr, false);
	const auto nodes = cluster.is_object() ? cluster.find("nodes") : cluster.end();
	if (!cluster.is_object() || nodes == cluster.end() || !nodes->is_array())
		return where + ": not a cluster (an object with \"nodes\")";
	std::map<std::string, NodeInfo> added;
	for (const nlohmann::json &node : *nodes) {
		const auto name = node.is_object() ? node.find("name") : node.end();
		const auto cpus = node.is_object() ? node.find("cpus") : node.end();
		if (name == node.end() || !name->is_string() || name->get<std::string>().empty() || cpus == node.end() ||
		    !cpus->is_array())
			return where + ": a node without a name or cpus";
		NodeInfo info;
		for (const nlohmann::json &cpu : *cpus) {
			if (!cpu.is_number_integer() || cpu.get<long>() < 0 || cpu.get<long>() > 999999)
				return where + ": node '" + name->get<std::string>() + "': cpus is not a list of CPU numbers";
			info.cpus.push_back(cpu.get<int>());
		}
		info.agent = "ipc://" + map.clusterDir + "/" + name->get<std::string>() + "/agent.sock";
		if (const auto host = node.find("host"); host != node.end() && host->is_string())
			info.host = host->get<std::string>();
		added.emplace(name->get<std::string>(), std::move(info));
	}
	// std::map::insert keeps what is there: MALLEO_NODES and MALLEO_NODE_AGENTS win over the file.
	for (auto &[name, info] : added)
		if (auto known = map.nodes.find(name); known != map.nodes.end() && known->second.host.empty())
			known->second.host = info.host;
	map.nodes.insert(added.begin(), added.end());
	return {};
}

std::string addClusterFileNodes(NodeMap &map)
{
	if (!map.described || map.clusterDir.empty())
		return {};
	std::ifstream in(map.clusterDir + "/cluster.json");
	if (!in)
		return {};
	std::ostringstream text;
	text << in.rdbuf();
	return addClusterNodes(text.str(), map);
}

} // namespace malleo::pcm
