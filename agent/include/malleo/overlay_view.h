// SPDX-License-Identifier: Apache-2.0
// The read-only view of the overlay that the core hands to protocol and decision modules.
#pragma once

#include <random>
#include <span>
#include <string>
#include <string_view>

#include <malleo/profile.h>

namespace malleo {

// A peer this agent has heard from within the failure timeout. A link exists
// while either side has the other in its view; both sides then heartbeat each
// other, so only a real failure makes a peer fall silent.
struct PeerEntry {
	std::string id;
	std::string endpoint;
	std::string group;	 // hierarchical protocol: the peer's group, else empty
	NodeProfile profile;
	double lastHeard = 0.0;  // agent clock, seconds
	bool inView = false;	 // this agent chose it for its view
	bool inPeerView = false; // the peer chose this agent for its view
};

// An address learned through gossip, not yet contacted.
struct Candidate {
	std::string id;
	std::string endpoint;
	std::string group;
	double heardAt = 0.0; // when some agent last heard from it, on this agent's clock
	bool contacted = false; // a hello is on its way, not yet answered
};

struct OverlayView {
	std::string_view self;
	std::string_view group;		    // this agent's group (hierarchical), else empty
	double now = 0.0;
	std::span<const PeerEntry> alive;	    // sorted by id
	std::span<const Candidate> candidates; // sorted by id
	const NodeProfile *local = nullptr;
	// The core's seeded generator: modules draw from it so that runs are reproducible.
	std::mt19937_64 *rng = nullptr;
};

} // namespace malleo
