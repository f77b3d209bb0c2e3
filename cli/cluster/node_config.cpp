// SPDX-License-Identifier: Apache-2.0
#include "node_config.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "config.h"
#include "json_text.h"
#include "module_registry.h"

namespace malleo::cli {

std::optional<nlohmann::json> readJsonObject(const std::string &path, const std::string &what,
					     Failure &failure)
{
	std::optional<std::string> text = readTextFile(path);
	if (!text) {
		failure = {kExitBadInput, fmt::format("{} {}: {}", what, path, std::strerror(errno))};
		return std::nullopt;
	}
	// Comments allowed, as malleod allows them in the configuration it reads.
	std::string why;
	std::optional<nlohmann::json> j = parseJsonText(*text, true, why);
	if (!j || !j->is_object()) {
		failure = {kExitBadInput, fmt::format("{} {}: {}", what, path, j ? "not a JSON object" : why)};
		return std::nullopt;
	}
	return j;
}

std::optional<Failure> checkNodeConfigs(const NodeConfigInput &input, const std::string &configFile,
					const std::map<std::string, nlohmann::json> &nodeFiles)
{
	std::vector<std::string> builtins;
	for (ModuleKind k : {ModuleKind::Profiling, ModuleKind::Protocol, ModuleKind::Decision})
		for (const std::string &n : builtinModuleNames(k))
			builtins.push_back(n);
	nlohmann::json common = input.base;
	mergeInto(common, {{"modules", input.modules}});
	AgentConfig config;
	if (std::string e = parseConfig(common, config, builtins); !e.empty())
		return Failure{kExitBadInput, configFile.empty() ? e : fmt::format("--config {}: {}", configFile, e)};
	for (const auto &[name, patch] : nodeFiles) {
		nlohmann::json node = common;
		mergeInto(node, patch);
		AgentConfig nodeConfig;
		if (std::string e = parseConfig(node, nodeConfig, builtins); !e.empty())
			return Failure{kExitBadInput, fmt::format("--node-config {}: {}", name, e)};
	}
	return std::nullopt;
}

void mergeInto(nlohmann::json &target, const nlohmann::json &patch)
{
	if (!target.is_object() || !patch.is_object()) {
		target = patch;
		return;
	}
	for (auto it = patch.begin(); it != patch.end(); ++it)
		mergeInto(target[it.key()], it.value());
}

nlohmann::json baseConfig(const NodeConfigInput &input)
{
	nlohmann::json config = input.base;
	if (!input.modules.empty())
		mergeInto(config, {{"modules", input.modules}});
	return config;
}

std::string baseConfigPath(const std::string &dir)
{
	return dir + "/base-config.json";
}

std::optional<Failure> writeBaseConfig(const std::string &dir, const NodeConfigInput &input)
{
	const std::string path = baseConfigPath(dir);
	std::ofstream out(path, std::ios::trunc);
	out << baseConfig(input).dump(2) << '\n';
	if (!out.flush())
		return Failure{kExitFailed, fmt::format("cannot write {}", path)};
	return std::nullopt;
}

void eraseClusterKeys(nlohmann::json &config)
{
	auto agent = config.find("agent");
	if (agent == config.end() || !agent->is_object())
		return;
	for (const char *key : {"id", "listen", "peers", "run_dir"})
		agent->erase(key);
	if (agent->empty())
		config.erase(agent);
}

nlohmann::json nodeConfig(const NodeConfigInput &input, const std::string &id,
			  const std::vector<std::string> &peers, const std::string &runDir)
{
	nlohmann::json config = baseConfig(input);
	mergeInto(config, input.node);
	mergeInto(config, {{"agent",
			    {{"id", id},
			     {"listen", "tcp://127.0.0.1:*"},
			     {"peers", peers},
			     {"run_dir", runDir}}}});
	return config;
}

} // namespace malleo::cli
