// SPDX-License-Identifier: Apache-2.0
// CURVE key files (docs/deployment.md): one key pair per node, made by `malleo keygen`. <node>.key holds the node's
// secret key, <node>.pub its public key, each as 40 characters of Z85 text on a line ('#' lines are comments). A
// directory of <node>.pub files is the set of nodes an agent lets in: a public key names the node that sent.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace malleo {

constexpr std::size_t kZ85KeyLength = 40;

// 40 characters of the Z85 alphabet.
bool isZ85Key(std::string_view text);

// Reads the one key a key file holds into `key`. Returns an empty string, or one line naming the file.
std::string readKeyFile(const std::string &path, std::string &key);

// The nodes allowed in, by public key (Z85) and by node id.
struct AllowedKeys {
	std::map<std::string, std::string> nodeOfKey;
	std::map<std::string, std::string> keyOfNode;

	// Adds one node; an empty string, or one line on a clash (a key or a node named twice).
	std::string add(const std::string &node, const std::string &key);
	bool empty() const { return nodeOfKey.empty(); }
};

// Reads every <node-id>.pub of `dir` (other files are ignored). Returns an empty string, or one line naming the file.
std::string readAllowedKeysDir(const std::string &dir, AllowedKeys &keys);

} // namespace malleo
