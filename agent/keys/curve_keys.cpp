// SPDX-License-Identifier: Apache-2.0
#include "curve_keys.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include <malleo/message.h>

namespace malleo {

namespace {

constexpr std::string_view kZ85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

} // namespace

bool isZ85Key(std::string_view text)
{
	return text.size() == kZ85KeyLength &&
	       std::all_of(text.begin(), text.end(), [](char c) { return kZ85Alphabet.find(c) != std::string_view::npos; });
}

std::string readKeyFile(const std::string &path, std::string &key)
{
	std::error_code ec;
	if (std::filesystem::is_directory(path, ec))
		return fmt::format("key file '{}': is a directory, not a file", path);
	std::ifstream in(path);
	if (!in)
		return fmt::format("key file '{}': cannot be read", path);
	std::string line, found;
	int keys = 0;
	while (std::getline(in, line)) {
		const std::size_t first = line.find_first_not_of(" \t\r");
		if (first == std::string::npos || line[first] == '#')
			continue;
		const std::size_t last = line.find_last_not_of(" \t\r");
		found = line.substr(first, last - first + 1);
		if (++keys > 1 || found.size() > 256)
			break;
	}
	if (keys == 0)
		return fmt::format("key file '{}': holds no key", path);
	if (keys > 1)
		return fmt::format("key file '{}': holds more than one key line", path);
	if (!isZ85Key(found))
		return fmt::format("key file '{}': not a CURVE key (expected 40 characters of Z85 text, as `malleo keygen` "
				   "writes)",
				   path);
	key = found;
	return {};
}

std::string AllowedKeys::add(const std::string &node, const std::string &key)
{
	if (auto it = nodeOfKey.find(key); it != nodeOfKey.end() && it->second != node)
		return fmt::format("the same public key is given for nodes '{}' and '{}'", it->second, node);
	if (auto it = keyOfNode.find(node); it != keyOfNode.end() && it->second != key)
		return fmt::format("node '{}' has two public keys", node);
	nodeOfKey[key] = node;
	keyOfNode[node] = key;
	return {};
}

std::string readAllowedKeysDir(const std::string &dir, AllowedKeys &keys)
{
	namespace fs = std::filesystem;
	std::error_code ec;
	if (!fs::is_directory(dir, ec))
		return fmt::format("allowed keys '{}': not a directory", dir);
	fs::directory_iterator it(dir, ec), end;
	if (ec)
		return fmt::format("allowed keys '{}': cannot be read ({})", dir, ec.message());
	for (; it != end; it.increment(ec)) {
		if (ec)
			return fmt::format("allowed keys '{}': cannot be read ({})", dir, ec.message());
		const fs::path &path = it->path();
		if (path.extension() != ".pub")
			continue;
		const std::string node = path.stem().string();
		// The node ids the agent takes (isValidId): a file named otherwise is nobody's key.
		if (!isValidId(node))
			return fmt::format("key file '{}': '{}' is no node id ({})", path.string(), printableText(node),
					   kIdRule);
		std::string key;
		if (std::string e = readKeyFile(path.string(), key); !e.empty())
			return e;
		if (std::string e = keys.add(node, key); !e.empty())
			return fmt::format("key file '{}': {}", path.string(), e);
	}
	return {};
}

} // namespace malleo
