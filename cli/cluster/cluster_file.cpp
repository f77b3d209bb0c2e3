// SPDX-License-Identifier: Apache-2.0
#include "cluster_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include <malleo/run_dir.h>

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

// Reads one node; a field of the wrong type makes the whole file unreadable
// rather than leaving a node half-known (we would signal the wrong pid).
std::optional<ClusterNode> parseNode(const nlohmann::json &j)
{
	if (!j.is_object())
		return std::nullopt;
	ClusterNode node;
	auto name = j.find("name");
	auto pid = j.find("pid");
	if (name == j.end() || !name->is_string() || pid == j.end() || !pid->is_number_integer())
		return std::nullopt;
	node.name = name->get<std::string>();
	node.pid = pid->get<long>();
	if (auto it = j.find("start_time"); it != j.end() && it->is_number_unsigned())
		node.startTime = it->get<unsigned long long>();
	if (auto it = j.find("cpus"); it != j.end() && it->is_array())
		for (const auto &cpu : *it)
			if (cpu.is_number_integer())
				node.cpus.push_back(cpu.get<int>());
	for (auto [key, field] : {std::pair{"run_dir", &node.runDir},
				  std::pair{"endpoint", &node.endpoint},
				  std::pair{"local", &node.local},
				  std::pair{"host", &node.host},
				  std::pair{"address", &node.address}})
		if (auto it = j.find(key); it != j.end() && it->is_string())
			*field = it->get<std::string>();
	return node;
}

} // namespace

const ClusterNode *ClusterFile::find(const std::string &name) const
{
	for (const ClusterNode &node : nodes)
		if (node.name == name)
			return &node;
	return nullptr;
}

std::string ClusterFile::names() const
{
	std::string list;
	for (const ClusterNode &node : nodes)
		list += (list.empty() ? "" : ", ") + node.name;
	return list;
}

std::optional<unsigned> nodeIndex(const std::string &name)
{
	if (name.size() < 2 || name.size() > 7 || name[0] != 'n' ||
	    name.find_first_not_of("0123456789", 1) != std::string::npos)
		return std::nullopt;
	return static_cast<unsigned>(std::stoul(name.substr(1)));
}

std::string clusterFilePath(const std::string &dir)
{
	return (fs::path(dir) / "cluster.json").string();
}

std::string localEndpoint(const ClusterNode &node)
{
	if (!node.local.empty() || node.runDir.empty())
		return node.local;
	return "ipc://" + (fs::path(node.runDir) / kAgentSocketName).string();
}

std::optional<ClusterFile> readClusterFile(const std::string &dir, Failure &failure)
{
	const std::string path = clusterFilePath(dir);
	std::ifstream in(path);
	if (!in) {
		if (errno != ENOENT)
			failure = {kExitFailed, fmt::format("cannot read {}: {}", path, std::strerror(errno))};
		else
			failure = {kExitFailed, ""};
		return std::nullopt;
	}
	nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
	auto nodes = j.is_object() ? j.find("nodes") : j.end();
	if (!j.is_object() || nodes == j.end() || !nodes->is_array()) {
		failure = {kExitFailed, fmt::format("{} is not a cluster file (no \"nodes\" list); "
						    "remove it or choose another --cluster-dir",
						    path)};
		return std::nullopt;
	}
	ClusterFile cluster;
	for (const auto &n : *nodes) {
		std::optional<ClusterNode> node = parseNode(n);
		if (!node) {
			failure = {kExitFailed,
				   fmt::format("{}: a node lacks a name or pid; remove the file or "
					       "choose another --cluster-dir",
					       path)};
			return std::nullopt;
		}
		cluster.nodes.push_back(std::move(*node));
	}
	return cluster;
}

std::optional<Failure> writeClusterFile(const std::string &dir, const ClusterFile &cluster)
{
	const std::string path = clusterFilePath(dir);
	const std::string tmp = path + ".tmp";
	{
		std::ofstream out(tmp, std::ios::trunc);
		out << toJson(cluster).dump(2) << '\n';
		if (!out.flush())
			return Failure{kExitFailed, fmt::format("cannot write {}: {}", tmp, std::strerror(errno))};
	}
	std::error_code ec;
	fs::rename(tmp, path, ec);
	if (ec)
		return Failure{kExitFailed, fmt::format("cannot write {}: {}", path, ec.message())};
	return std::nullopt;
}

nlohmann::json toJson(const ClusterNode &node)
{
	nlohmann::json j = {{"name", node.name},	   {"pid", node.pid},		{"start_time", node.startTime},
			    {"cpus", node.cpus},	   {"run_dir", node.runDir}, {"endpoint", node.endpoint},
			    {"local", node.local}};
	if (!node.host.empty())
		j.update({{"host", node.host}, {"address", node.address}});
	return j;
}

nlohmann::json toJson(const ClusterFile &cluster)
{
	nlohmann::json nodes = nlohmann::json::array();
	for (const ClusterNode &node : cluster.nodes)
		nodes.push_back(toJson(node));
	return {{"nodes", std::move(nodes)}};
}

std::string shellWord(const std::string &word)
{
	if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
						    "_-./=:,+@%") == std::string::npos)
		return word;
	std::string quoted = "'";
	for (char c : word)
		quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return quoted + "'";
}

} // namespace malleo::cli
