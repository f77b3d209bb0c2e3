// SPDX-License-Identifier: Apache-2.0
// Protocol modules: the shape of the overlay — whom to keep, whom to gossip
// with, where a work-stealing request goes next.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <malleo/module.h>
#include <malleo/overlay_view.h>

namespace malleo {

class ProtocolModule : public Module
{
public:
	// The group this agent announces (hierarchical protocols), or empty.
	virtual std::string group(std::string_view selfId) const = 0;

	// The ids this agent should heartbeat: a subset of alive peers and
	// candidates. Candidates chosen here are contacted with a hello.
	virtual std::vector<std::string> chooseView(const OverlayView &view) = 0;

	// The peers to send a gossip message to this round, and which known peers
	// (alive or candidates) the message should carry.
	struct Gossip {
		std::vector<std::string> targets;
		std::vector<std::string> carry;
	};
	virtual Gossip chooseGossip(const OverlayView &view) = 0;

	// The next hop of a work-stealing request, among alive peers not in
	// `visited`; nullopt when there is none.
	virtual std::optional<std::string> nextHop(const OverlayView &view,
						   std::span<const std::string> visited) = 0;
};

} // namespace malleo
