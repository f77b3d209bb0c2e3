// SPDX-License-Identifier: Apache-2.0
#include "config.h"

#include <malleo/config_table.h>
#include <malleo/message.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "curve_keys.h"
#include "endpoints.h"
#include "json_text.h"

namespace malleo {

namespace {

constexpr double kDay = 86400.0;

std::string checkId(const std::string &id)
{
	if (!isValidId(id))
		return fmt::format("config key 'agent.id': '{}' is no id ({})", printableText(id), kIdRule);
	return {};
}

// Each endpoint as it is read, so that a slip is one line at start rather than a bind to another port or a seed
// that silently never answers.
void checkEndpoints(ConfigTable &r, const AgentConfig &config)
{
	const auto check = [&r](const char *key, const std::string &endpoint, EndpointUse use) {
		if (std::string problem = endpointProblem(endpoint, use); !problem.empty())
			r.fail(key, problem);
	};
	check("listen", config.listen, EndpointUse::Bind);
	if (!config.advertise.empty())
		check("advertise", config.advertise, EndpointUse::Connect);
	if (!config.appListen.empty() && config.appListen != "off")
		check("app_listen", config.appListen, EndpointUse::Bind);
	for (const std::string &seed : config.core.seeds)
		check("peers", seed, EndpointUse::Connect);
	HostPort metrics;
	if (!config.metricsListen.empty() && config.metricsListen != "off")
		if (std::string problem = parseHostPort(config.metricsListen, metrics); !problem.empty())
			r.fail("metrics_listen", problem);
}

// Seeds written NODE@ENDPOINT name the node that listens there: its endpoint goes to the core, its node to the
// CURVE client that needs the node's public key before the first message.
std::string splitSeedNodes(AgentConfig &config)
{
	config.seedNodes.clear();
	for (std::string &seed : config.core.seeds) {
		// The last '@' before the endpoint's scheme: a node id may hold one too.
		const std::size_t scheme = seed.find("://");
		const std::size_t at = seed.rfind('@', scheme);
		if (at == std::string::npos)
			continue;
		std::string node = seed.substr(0, at);
		if (!isValidId(node))
			return fmt::format("'{}': the node before '@' is no id ({})", printableText(seed), kIdRule);
		seed = seed.substr(at + 1);
		config.seedNodes[seed] = std::move(node);
	}
	return {};
}

// The `security` table. allowed_keys is a directory (a string) or a table of node id to public key.
std::string readSecurity(const nlohmann::json &table, SecurityConfig &security)
{
	nlohmann::json rest = table;
	const nlohmann::json *listed = nullptr;
	if (auto it = table.find("allowed_keys"); table.is_object() && it != table.end() && it->is_object()) {
		listed = &*it;
		rest.erase("allowed_keys");
	}
	ConfigTable r(rest, "security");
	r.string("secret_key", security.secretKeyFile, true);
	if (!listed)
		r.string("allowed_keys", security.allowedKeysDir, true);
	r.boolean("plain", security.plain);
	r.finish();
	if (!r.error().empty())
		return r.error();
	if (listed) {
		security.allowedKeysDir.clear();
		security.allowedKeys.clear();
		AllowedKeys keys;
		for (const auto &[node, key] : listed->items()) {
			if (!isValidId(node))
				return fmt::format("config key 'security.allowed_keys': '{}' is no node id ({})",
						   printableText(node), kIdRule);
			if (!key.is_string() || !isZ85Key(key.get_ref<const std::string &>()))
				return fmt::format("config key 'security.allowed_keys.{}': expected a public key (40 "
						   "characters of Z85 text, as in the node's .pub file)",
						   node);
			if (std::string e = keys.add(node, key.get<std::string>()); !e.empty())
				return fmt::format("config key 'security.allowed_keys': {}", e);
			security.allowedKeys[node] = key.get<std::string>();
		}
	} else if (!security.allowedKeysDir.empty()) {
		security.allowedKeys.clear();
	}
	if (security.plain && security.curve())
		return "config key 'security.plain': true with security.secret_key set; choose one (plain is TCP "
		       "without authentication)";
	return {};
}

// The sections read by a ConfigTable: each its keys, their bounds and its own checks (ConfigTable::fail).
void readAgent(ConfigTable &r, AgentConfig &config)
{
	r.string("id", config.core.id);
	r.string("listen", config.listen);
	r.string("advertise", config.advertise, true);
	r.string("app_listen", config.appListen, true);
	r.string("metrics_listen", config.metricsListen, true);
	if (!config.appListen.empty() && config.appListen != "off" && !config.appListen.starts_with("tcp://"))
		r.fail("app_listen", fmt::format("expected a tcp:// endpoint or \"off\", got \"{}\"", config.appListen));
	r.strings("peers", config.core.seeds);
	if (std::string e = splitSeedNodes(config); !e.empty())
		r.fail("peers", e);
	checkEndpoints(r, config);
	r.string("run_dir", config.runDir);
	r.string("log_level", config.logLevel);
	r.integer("seed", config.core.seed, 0, UINT64_MAX);
	r.number("tick", config.tick, 0.001, 10);
	r.number("profile_interval", config.profileInterval, 0.01, 3600);
	r.integer("max_message_bytes", config.maxMessageBytes, 256, 16 << 20);
	r.boolean("debug_json", config.debugJson);
	r.number("decision_interval", config.core.decisionInterval, 0.01, 3600);
}

void readMembership(ConfigTable &r, AgentConfig &config)
{
	r.number("heartbeat_interval", config.core.heartbeatInterval, 0.01, 3600);
	r.number("failure_timeout", config.core.failureTimeout, 0.02, kDay);
	r.number("gossip_interval", config.core.gossipInterval, 0, 3600);
	r.number("join_retry", config.core.joinRetry, 0.01, 3600);
	r.integer("max_candidates", config.core.maxCandidates, 1, 1 << 20);
	r.integer("max_peers", config.core.maxPeers, 1, 1 << 16);
	r.boolean("peer_ipc", config.core.peerIpc);
}

void readWorkStealing(ConfigTable &r, AgentConfig &config)
{
	r.boolean("enabled", config.core.wrmEnabled);
	r.boolean("on_join", config.core.wrmOnJoin);
	r.number("idle_threshold", config.core.idleThreshold, 0, 1);
	r.integer("ttl", config.core.ttl, 0, kTtlMax);
	r.number("timeout", config.core.wrmTimeout, 0.001, 3600);
	r.number("backoff_initial", config.core.backoffInitial, 0.001, 3600);
	r.number("backoff_max", config.core.backoffMax, 0.001, kDay);
	r.number("cooldown", config.core.wrmCooldown, 0, kDay);
}

void readActions(ConfigTable &r, AgentConfig &config)
{
	r.boolean("act", config.core.act);
	r.number("hold_down", config.core.holdDown, 0, kDay);
	r.number("request_timeout", config.core.requestTimeout, 0.1, kDay);
	r.number("drain_deadline", config.core.drainDeadline, 0, kDay);
	r.boolean("node_weights", config.core.nodeWeights);
}

void readModules(ConfigTable &r, AgentConfig &config)
{
	r.string("profiling", config.modules.profiling);
	r.string("protocol", config.modules.protocol);
	r.string("decision", config.modules.decision);
	r.strings("path", config.modules.path);
	std::string onError = config.modules.fallback ? "fallback" : "exit";
	r.string("on_error", onError);
	if (onError != "exit" && onError != "fallback")
		r.fail("on_error", fmt::format("expected \"exit\" or \"fallback\", got \"{}\"", onError));
	config.modules.fallback = onError == "fallback";
}

struct Section {
	const char *name;
	void (*read)(ConfigTable &r, AgentConfig &config);
};

// In the order their errors are looked for; `security` (not a ConfigTable) comes after them.
constexpr Section kSections[] = {{"agent", readAgent},	   {"membership", readMembership},
				 {"work_stealing", readWorkStealing}, {"actions", readActions},
				 {"modules", readModules}};

// Every other top-level key must name a module (loaded or configured), whose table the module reads itself.
std::string readModuleTables(const nlohmann::json &doc, AgentConfig &config,
			     const std::vector<std::string> &moduleNames)
{
	for (const auto &[key, value] : doc.items()) {
		const bool section = key == "security" || std::any_of(std::begin(kSections), std::end(kSections),
								      [&](const Section &s) { return key == s.name; });
		if (section)
			continue;
		bool isModule = std::find(moduleNames.begin(), moduleNames.end(), key) != moduleNames.end() ||
				key == config.modules.profiling || key == config.modules.protocol ||
				key == config.modules.decision;
		if (!isModule)
			return fmt::format("config key '{}': unknown section (sections: agent, membership, "
					   "work_stealing, actions, modules, security, or a module's name)", key);
		if (!value.is_object())
			return fmt::format("config key '{}': expected a table (JSON object)", key);
		config.moduleTables[key] = value;
	}
	return {};
}

} // namespace

nlohmann::json AgentConfig::moduleTable(const std::string &name) const
{
	auto it = moduleTables.find(name);
	return it == moduleTables.end() ? nlohmann::json::object() : *it;
}

std::string parseConfig(const nlohmann::json &doc, AgentConfig &config,
			const std::vector<std::string> &moduleNames)
{
	if (!doc.is_object())
		return "config: the document must be a JSON object";
	for (const Section &section : kSections) {
		auto t = doc.find(section.name);
		if (t == doc.end())
			continue;
		ConfigTable r(*t, section.name);
		section.read(r, config);
		r.finish();
		if (!r.error().empty())
			return r.error();
	}
	if (auto t = doc.find("security"); t != doc.end()) {
		if (!t->is_object())
			return "config key 'security': expected a table (JSON object)";
		if (std::string e = readSecurity(*t, config.security); !e.empty())
			return e;
	}
	if (std::string e = readModuleTables(doc, config, moduleNames); !e.empty())
		return e;
	if (config.core.backoffMax < config.core.backoffInitial)
		return "config key 'work_stealing.backoff_max': must not be below backoff_initial";
	if (!config.core.id.empty())
		if (std::string e = checkId(config.core.id); !e.empty())
			return e;
	return {};
}

std::string appListenEndpoint(const AgentConfig &config)
{
	if (config.appListen == "off")
		return {};
	if (!config.appListen.empty())
		return config.appListen;
	// Same interface as the peers', so whatever reaches the agent's peers reaches it; a port of its own.
	const std::size_t colon = config.listen.rfind(':');
	if (!config.listen.starts_with("tcp://") || colon == std::string::npos || colon < 6)
		return {};
	return config.listen.substr(0, colon) + ":*";
}

std::string securityProblem(const AgentConfig &config)
{
	const SecurityConfig &s = config.security;
	if (s.curve()) {
		if (s.allowedKeysDir.empty() && s.allowedKeys.empty())
			return "security.secret_key is set but security.allowed_keys is not: name the directory of the "
			       "nodes' .pub files (malleo keygen --dir DIR NODE...) or list them";
		std::string key;
		if (std::string e = readKeyFile(s.secretKeyFile, key); !e.empty())
			return "security.secret_key: " + e;
		AllowedKeys allowed;
		if (!s.allowedKeysDir.empty())
			if (std::string e = readAllowedKeysDir(s.allowedKeysDir, allowed); !e.empty())
				return "security.allowed_keys: " + e;
		return {};
	}
	if (s.plain)
		return {};
	const std::string app = appListenEndpoint(config);
	if (config.listen.starts_with("tcp://") || app.starts_with("tcp://"))
		return fmt::format("agent '{}' would listen on TCP ({}) unauthenticated: make keys with `malleo keygen --dir "
				   "DIR {}` and set security.secret_key (DIR/{}.key) and security.allowed_keys (DIR), or "
				   "set security.plain: true to accept anyone who reaches the port (docs/deployment.md)",
				   config.core.id, config.listen.starts_with("tcp://") ? config.listen : app,
				   config.core.id.empty() ? "NODE" : config.core.id,
				   config.core.id.empty() ? "NODE" : config.core.id);
	return {};
}

std::string loadConfigFile(const std::string &path, AgentConfig &config,
			   const std::vector<std::string> &moduleNames)
{
	// A directory opens as a stream whose first read throws: say what it is instead.
	std::error_code ec;
	if (std::filesystem::is_directory(path, ec))
		return fmt::format("config file '{}': is a directory, not a file", path);
	std::optional<std::string> text = readTextFile(path);
	if (!text)
		return fmt::format("config file '{}': cannot be read", path);
	std::string why;
	std::optional<nlohmann::json> doc = parseJsonText(*text, true, why);
	if (!doc)
		return fmt::format("config file '{}': {}", path, why);
	std::string error = parseConfig(*doc, config, moduleNames);
	return error.empty() ? error : fmt::format("{}: {}", path, error);
}

} // namespace malleo
