// SPDX-License-Identifier: Apache-2.0
// `malleo keygen`: a CURVE key pair per node (node_keys.h).
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cluster_commands.h"
#include "failure.h"
#include "node_keys.h"

namespace malleo::cli {

int keygenCommand(const KeygenOptions &keygen)
{
	std::vector<NodeKeyFiles> made;
	for (const std::string &node : keygen.nodes) {
		Failure failure;
		std::optional<NodeKeyFiles> files = makeNodeKeys(keygen.dir, node, keygen.force, failure);
		if (!files)
			return report(failure); // the pairs made before stay: each is whole
		made.push_back(*files);
	}
	if (keygen.json) {
		nlohmann::json keys = nlohmann::json::array();
		for (const NodeKeyFiles &f : made)
			keys.push_back({{"node", f.node},
					{"secret_key_file", f.secretFile},
					{"public_key_file", f.publicFile},
					{"public_key", f.publicKey}});
		std::cout << nlohmann::json{{"dir", keygen.dir}, {"keys", keys}}.dump(2) << '\n';
		return kExitOk;
	}
	for (const NodeKeyFiles &f : made)
		std::cout << fmt::format("{}: secret key {} (keep on {} only), public key {}\n", f.node, f.secretFile,
					 f.node, f.publicFile);
	std::cout << fmt::format("next: on each node set security.secret_key to its .key and security.allowed_keys to a "
				 "directory holding every node's .pub (docs/deployment.md)\n");
	return kExitOk;
}

} // namespace malleo::cli
