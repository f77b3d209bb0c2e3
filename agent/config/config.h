// SPDX-License-Identifier: Apache-2.0
// The agent's configuration: one JSON document, one table per section and per
// module. docs/configuration.md documents every key with its default.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <malleo/wire.h>

#include "core_config.h"

namespace malleo {

struct ModuleSelection {
	std::string profiling = "host";
	std::string protocol = "p2p";
	std::string decision = "loaddiff";
	std::vector<std::string> path; // directories searched for shared-object modules
	bool fallback = false;	       // a refused module: use the default built-in instead of exiting
};

// Who may talk to this agent over TCP (docs/deployment.md): ZeroMQ CURVE with one key pair per node.
struct SecurityConfig {
	std::string secretKeyFile;  // this node's <node>.key (malleo keygen); empty: no CURVE
	std::string allowedKeysDir; // a directory of <node-id>.pub files, read again when it changes
	std::map<std::string, std::string> allowedKeys; // node id -> public key (Z85), written in the config
	bool plain = false;	    // TCP without CURVE: anyone who reaches the agent is heard
	bool curve() const { return !secretKeyFile.empty(); }
};

struct AgentConfig {
	CoreConfig core;
	// The node each seed peer is, from peers written NODE@ENDPOINT: with CURVE, a seed's public key is its node's.
	std::map<std::string, std::string> seedNodes;
	SecurityConfig security;
	std::string listen = "tcp://0.0.0.0:5470";
	std::string advertise; // the endpoint peers use; empty: derived from the bound one
	// Where coordinators on other nodes reach this agent for `poll` and `result` (docs/protocol.md): empty means
	// listen's host with any port, "off" nowhere.
	std::string appListen;
	std::string runDir;    // empty: defaultRunDir() (malleo/run_dir.h)
	// HOST:PORT where the daemon serves Prometheus metrics over HTTP (GET /metrics); empty or "off": nowhere.
	std::string metricsListen;
	std::string logLevel = "info";
	double tick = 0.1;
	double profileInterval = 1.0;
	std::size_t maxMessageBytes = kDefaultMaxMessageBytes;
	bool debugJson = false; // send JSON text bodies instead of MessagePack
	ModuleSelection modules;
	nlohmann::json moduleTables = nlohmann::json::object();

	// The table of module `name` (an empty object if the config has none).
	nlohmann::json moduleTable(const std::string &name) const;
};

// Reads `doc` into `config`, on top of its current values. Returns an empty
// string, or one line naming the key and what is wrong with it.
std::string parseConfig(const nlohmann::json &doc, AgentConfig &config,
			const std::vector<std::string> &moduleNames);

// The endpoint to bind for coordinators on other nodes, or empty when there is to be none.
std::string appListenEndpoint(const AgentConfig &config);

// Whether an agent may start so: an endpoint on TCP needs keys (security.secret_key and security.allowed_keys) or
// security.plain. An empty string, or one line saying what to do.
std::string securityProblem(const AgentConfig &config);

// Reads a file; same contract, the line also names the file.
std::string loadConfigFile(const std::string &path, AgentConfig &config,
			   const std::vector<std::string> &moduleNames);

} // namespace malleo
