// SPDX-License-Identifier: Apache-2.0
// The public keys an agent lets in, and which node each names (security.allowed_keys): read at start, and again
// when the directory changes, so that removing a node's .pub revokes it at its next connection without a restart.
#pragma once

#include <ctime>
#include <string>

#include "config.h"
#include "curve_keys.h"

namespace malleo {

class KeyRing
{
public:
	explicit KeyRing(SecurityConfig security) : security_(std::move(security)) {}

	// Reads the keys; an empty string, or one line naming the file (the keys read before are kept).
	std::string load();
	// Reads the directory again if it changed since; same contract.
	std::string refresh();

	// The node whose public key this is, or empty.
	std::string nodeOf(const std::string &publicKey) const;
	// The node's public key, or empty.
	std::string keyOf(const std::string &node) const;
	std::size_t size() const { return keys_.nodeOfKey.size(); }

private:
	bool changed();

	SecurityConfig security_;
	AllowedKeys keys_;
	struct timespec seen_ = {0, 0};
};

} // namespace malleo
