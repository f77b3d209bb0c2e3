// SPDX-License-Identifier: Apache-2.0
// Membership, a component of the core (core.h): the alive peers, the candidates heard of through gossip and
// welcomes, the view the protocol module chooses, heartbeats and failure detection, joins, unlinks and leaves.
// Pure as the core is: messages and ticks in, messages and events out. What it needs of the rest of the core (what
// this agent says of itself, how a bad message is refused) comes through MembershipHooks.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <malleo/overlay_view.h>
#include <malleo/protocol_module.h>

#include "core_context.h"

namespace malleo {

struct MembershipHooks {
	// A hello, welcome or heartbeat as this agent sends it: where it listens, its group and profile, what it
	// says of its applications.
	std::function<Message(std::string_view type)> describeSelf;
	// A peer message refused: counted, emitted and maybe answered (Core::reject).
	std::function<void(const Rejection &rejection, const Message &message, double now, CoreOutputs &out)> reject;
	// A hello, welcome or heartbeat accepted from a peer (the roots it names).
	std::function<void(const Message &message, double now)> accepted;
	// This agent found its first peer.
	std::function<void()> joined;
};

class Membership
{
public:
	Membership(CoreContext &ctx, ProtocolModule &protocol, MembershipHooks hooks);

	void start(double now);
	// Stalls discounted, silent peers dropped, the view chosen, heartbeats and gossip sent when due.
	void tick(double now, CoreOutputs &out);

	void onHello(const Message &m, double now, CoreOutputs &out);
	void onWelcome(const Message &m, double now, CoreOutputs &out);
	void onGossip(const Message &m, double now, CoreOutputs &out);
	// The peer it came from, or nullptr when refused.
	PeerEntry *onHeartbeat(const Message &m, double now, CoreOutputs &out);
	void onLeave(const Message &m, double now, CoreOutputs &out);
	void onUnlink(const Message &m, double now, CoreOutputs &out);
	void onError(const Message &m, double now, CoreOutputs &out);
	// Graceful leave: tells every alive peer.
	void leave(double now, CoreOutputs &out);

	// A message from a known peer: it is alive.
	void touch(const std::string &id, double now);
	// Empty when this agent may connect to `endpoint`, learned from a peer; otherwise why not.
	std::string endpointRefusal(const std::string &endpoint) const;
	// What the modules see; `alive` and `candidates` hold what its spans point to.
	OverlayView view(double now, std::vector<PeerEntry> &alive, std::vector<Candidate> &candidates);

	const std::map<std::string, PeerEntry> &peers() const { return peers_; }
	const std::map<std::string, Candidate> &candidates() const { return candidates_; }
	// Peers whose heartbeats say they drain: nothing moves onto them.
	const std::set<std::string> &drainingPeers() const { return drainingPeers_; }
	bool joined() const { return joined_; }

private:
	// Adds or updates a peer; nullptr when the table is full of peers this agent chose.
	PeerEntry *refreshPeer(const std::string &id, const std::string &endpoint, const std::string &group,
			       const NodeProfile &profile, double now, CoreOutputs &out);
	bool evictPeer(double now, CoreOutputs &out);
	void markJoined(const std::string &via, double now, CoreOutputs &out);
	// The profile, endpoint and group of a hello, welcome or heartbeat, checked and recorded.
	PeerEntry *acceptPeer(const Message &m, double now, CoreOutputs &out);
	void dropPeer(const std::string &id, const char *why, double now, CoreOutputs &out);
	void learnCandidates(const nlohmann::json &entries, double now);
	nlohmann::json describePeers(const std::vector<std::string> &ids, double now) const;
	// A gap between ticks past the failure timeout: peers are not blamed for this agent having stopped.
	void discountStall(double now);
	void expire(double now, CoreOutputs &out);
	void maintainView(double now, CoreOutputs &out);
	void heartbeat(double now, CoreOutputs &out);
	void gossip(double now, CoreOutputs &out);

	CoreContext &ctx_;
	ProtocolModule &protocol_;
	MembershipHooks hooks_;

	std::map<std::string, PeerEntry> peers_;
	std::map<std::string, Candidate> candidates_;
	std::map<std::string, double> helloSentAt_; // endpoint → time
	std::set<std::string> drainingPeers_;
	bool joined_ = false;
	double nextSeedHello_ = 0.0;
	double nextHeartbeat_ = 0.0;
	double nextGossip_ = 0.0;
	double lastTick_ = 0.0; // the last tick (or the start)
	// The gap between the last two ticks that were no stall; none known before the second tick.
	double usualTickGap_ = std::numeric_limits<double>::infinity();
	static constexpr double kStallFactor = 4.0; // a gap this many times the usual one (and past the timeout) is a stall
	static constexpr double kTickGapMin = 1e-3;
};

} // namespace malleo
