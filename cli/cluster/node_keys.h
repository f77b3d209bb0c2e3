// SPDX-License-Identifier: Apache-2.0
// CURVE key pairs for nodes (`malleo keygen`, docs/deployment.md): one pair per node, <dir>/<node>.key (the secret,
// 0600) and <dir>/<node>.pub (the public key), as the agent reads them (agent/src/curve_keys.h).
#pragma once

#include <optional>
#include <string>

#include "failure.h"

namespace malleo::cli {

struct NodeKeyFiles {
	std::string node;
	std::string secretFile;
	std::string publicFile;
	std::string publicKey;
	bool made = false; // false: kept as found (ensureNodeKeys)
};

// Makes node's key pair in dir (created 0700 if missing). An existing key file is an error unless `force`.
std::optional<NodeKeyFiles> makeNodeKeys(const std::string &dir, const std::string &node, bool force,
					 Failure &failure);

// The node's key pair in dir: the files found there, or a new pair when there are none (`malleo cluster up`).
std::optional<NodeKeyFiles> ensureNodeKeys(const std::string &dir, const std::string &node, Failure &failure);


} // namespace malleo::cli
