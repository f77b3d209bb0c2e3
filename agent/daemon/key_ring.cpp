// SPDX-License-Identifier: Apache-2.0
#include "key_ring.h"

#include <sys/stat.h>

namespace malleo {

std::string KeyRing::load()
{
	AllowedKeys keys;
	if (!security_.allowedKeysDir.empty()) {
		changed(); // the directory as read now
		if (std::string e = readAllowedKeysDir(security_.allowedKeysDir, keys); !e.empty())
			return e;
	}
	for (const auto &[node, key] : security_.allowedKeys)
		if (std::string e = keys.add(node, key); !e.empty())
			return "security.allowed_keys: " + e;
	keys_ = std::move(keys);
	return {};
}

std::string KeyRing::refresh()
{
	if (security_.allowedKeysDir.empty() || !changed())
		return {};
	return load();
}

// A file added, removed or renamed in the directory changes its modification time.
bool KeyRing::changed()
{
	struct stat st = {};
	if (stat(security_.allowedKeysDir.c_str(), &st) != 0)
		return false;
	if (st.st_mtim.tv_sec == seen_.tv_sec && st.st_mtim.tv_nsec == seen_.tv_nsec)
		return false;
	seen_ = st.st_mtim;
	return true;
}

std::string KeyRing::nodeOf(const std::string &publicKey) const
{
	auto it = keys_.nodeOfKey.find(publicKey);
	return it == keys_.nodeOfKey.end() ? std::string() : it->second;
}

std::string KeyRing::keyOf(const std::string &node) const
{
	auto it = keys_.keyOfNode.find(node);
	return it == keys_.keyOfNode.end() ? std::string() : it->second;
}

} // namespace malleo
