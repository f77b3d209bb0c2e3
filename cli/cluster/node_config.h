// SPDX-License-Identifier: Apache-2.0
// The configuration file of one node of a virtual cluster: a base file, the
// module flags, a per-node file on top, then the keys the cluster decides.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "failure.h"

namespace malleo::cli {

struct NodeConfigInput {
	nlohmann::json base = nlohmann::json::object();  // --config
	nlohmann::json modules = nlohmann::json::object(); // --profiling, --protocol, --decision
	nlohmann::json node = nlohmann::json::object();  // --node-config NAME=FILE
};

// Reads a JSON object from path; what for names the flag in the error.
std::optional<nlohmann::json> readJsonObject(const std::string &path, const std::string &what,
					     Failure &failure);

// The agent's own checks (agent/src/config.h) of each node's configuration before any agent starts: a bad key is
// then named with the file it came from (--config FILE, --node-config NAME=FILE), not as the merged
// <dir>/nK/config.json in a dead agent's log, and it is bad input (status 2).
std::optional<Failure> checkNodeConfigs(const NodeConfigInput &input, const std::string &configFile,
					const std::map<std::string, nlohmann::json> &nodeFiles);

// Merges patch into target: objects key by key, anything else replaced.
void mergeInto(nlohmann::json &target, const nlohmann::json &patch);

// What every node of a cluster shares: the --config file and the module flags.
nlohmann::json baseConfig(const NodeConfigInput &input);

// <dir>/base-config.json: baseConfig(), written by `cluster up` for `cluster add`.
std::string baseConfigPath(const std::string &dir);
std::optional<Failure> writeBaseConfig(const std::string &dir, const NodeConfigInput &input);

// The keys of a node's configuration that the cluster decides for it (agent.id, listen, peers, run_dir) taken
// out: what is left of a node's config.json is a base for another node.
void eraseClusterKeys(nlohmann::json &config);

// The node's whole configuration. The cluster's keys (agent.id, listen,
// peers, run_dir) win over every file, so a file cannot break the cluster.
nlohmann::json nodeConfig(const NodeConfigInput &input, const std::string &id,
			  const std::vector<std::string> &peers, const std::string &runDir);

} // namespace malleo::cli
