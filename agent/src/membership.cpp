// SPDX-License-Identifier: Apache-2.0
// Membership: the peers this agent keeps (hellos, welcomes, heartbeats, gossip, unlinks, leaves), the candidates it
// heard of, the view the protocol module chooses among them and failure detection.
#include "membership.h"

#include <algorithm>

#include <fmt/format.h>

namespace malleo {

Membership::Membership(CoreContext &ctx, ProtocolModule &protocol, MembershipHooks hooks)
	: ctx_(ctx), protocol_(protocol), hooks_(std::move(hooks))
{
}

void Membership::start(double now)
{
	lastTick_ = now;
	nextSeedHello_ = now;
	nextHeartbeat_ = now + ctx_.config.heartbeatInterval;
	nextGossip_ = now + ctx_.config.gossipInterval;
}

void Membership::tick(double now, CoreOutputs &out)
{
	discountStall(now);
	expire(now, out);
	maintainView(now, out);
	heartbeat(now, out);
	gossip(now, out);
}

void Membership::touch(const std::string &id, double now)
{
	if (auto it = peers_.find(id); it != peers_.end())
		it->second.lastHeard = now;
}

// A peer names endpoints (its own, its peers', a WRM's origin) that this agent then connects to and writes into:
// a TCP address a peer can reach, or an ipc:// socket only when the configuration names it as a seed or allows
// peers' ipc endpoints (agents of one host): never, say, another agent's local endpoint.
std::string Membership::endpointRefusal(const std::string &endpoint) const
{
	// A malformed tcp:// address fails at connect, which the transport survives; other transports are refused here,
	// but for this agent's own (the simulator's sim://).
	const std::string own = ctx_.config.endpoint.substr(0, ctx_.config.endpoint.find("://") + 3);
	if (!endpoint.starts_with("tcp://") && !endpoint.starts_with("ipc://") &&
	    !(own.size() > 3 && own != "ipc://" && endpoint.starts_with(own)))
		return fmt::format("'{}': only tcp:// (or ipc://) endpoints are taken from peers", printableText(endpoint));
	if (endpoint.starts_with("ipc://") && !ctx_.config.peerIpc &&
	    std::find(ctx_.config.seeds.begin(), ctx_.config.seeds.end(), endpoint) == ctx_.config.seeds.end())
		return fmt::format("'{}': an ipc:// endpoint from a peer (membership.peer_ipc is off)", printableText(endpoint));
	return {};
}

// ---------------------------------------------------------------- membership

PeerEntry *Membership::refreshPeer(const std::string &id, const std::string &endpoint,
			     const std::string &group, const NodeProfile &profile, double now,
			     CoreOutputs &out)
{
	auto it = peers_.find(id);
	if (it == peers_.end()) {
		if (peers_.size() >= ctx_.config.maxPeers && !evictPeer(now, out)) {
			ctx_.counters.add("peers.refused_full");
			return nullptr;
		}
		it = peers_.try_emplace(id).first;
		it->second.id = id;
		ctx_.counters.add("peers.joined");
		ctx_.emit({{"type", "peer_up"}, {"peer", id}, {"endpoint", endpoint}}, now, out);
	} else if (it->second.endpoint != endpoint) {
		out.disconnects.push_back(it->second.endpoint);
	}
	PeerEntry &peer = it->second;
	peer.endpoint = endpoint;
	peer.group = group;
	peer.profile = profile;
	peer.lastHeard = now;
	candidates_.erase(id);
	helloSentAt_.erase(endpoint);
	return &peer;
}

// A full table makes room for a newcomer by dropping the peer heard from longest ago among those this
// agent did not choose for its view: the ones it chose are the overlay it keeps, whoever else calls.
bool Membership::evictPeer(double now, CoreOutputs &out)
{
	auto victim = peers_.end();
	for (auto it = peers_.begin(); it != peers_.end(); ++it)
		if (!it->second.inView && (victim == peers_.end() || it->second.lastHeard < victim->second.lastHeard))
			victim = it;
	if (victim == peers_.end())
		return false;
	dropPeer(victim->first, "evicted", now, out);
	return true;
}

PeerEntry *Membership::acceptPeer(const Message &m, double now, CoreOutputs &out)
{
	NodeProfile profile;
	const std::string &type = m["type"].get_ref<const std::string &>();
	if (std::string err = fromJson(m["profile"], profile); !err.empty()) {
		hooks_.reject({"bad_field", type + ": " + err}, m, now, out);
		return nullptr;
	}
	if (std::string err = endpointRefusal(m["endpoint"].get<std::string>()); !err.empty()) {
		hooks_.reject({"endpoint_refused", type + ": " + err}, m, now, out);
		return nullptr;
	}
	PeerEntry *peer = refreshPeer(m["from"].get<std::string>(), m["endpoint"].get<std::string>(),
				      m.value("group", ""), profile, now, out);
	if (peer)
		hooks_.accepted(m, now);
	return peer;
}

void Membership::dropPeer(const std::string &id, const char *why, double now, CoreOutputs &out)
{
	auto it = peers_.find(id);
	if (it == peers_.end())
		return;
	ctx_.counters.add(fmt::format("peers.dropped.{}", why));
	ctx_.emit({{"type", "peer_down"}, {"peer", id}, {"why", why},
	      {"silent_for", now - it->second.lastHeard}},
	     now, out);
	out.disconnects.push_back(it->second.endpoint);
	drainingPeers_.erase(it->first);
	peers_.erase(it);
}

void Membership::learnCandidates(const nlohmann::json &entries, double now)
{
	for (const nlohmann::json &e : entries) {
		if (!e.is_object())
			continue;
		auto id = e.find("id");
		auto endpoint = e.find("endpoint");
		auto age = e.find("age");
		if (id == e.end() || !id->is_string() || endpoint == e.end() ||
		    !endpoint->is_string() || age == e.end() || !age->is_number())
			continue;
		const std::string &peerId = id->get_ref<const std::string &>();
		const std::string &ep = endpoint->get_ref<const std::string &>();
		double heardAt = now - std::max(0.0, age->get<double>());
		if (peerId == ctx_.config.id || peers_.count(peerId) || heardAt + ctx_.config.failureTimeout < now)
			continue;
		if (!isValidId(peerId.data(), peerId.size()) || ep.size() > 256 || !endpointRefusal(ep).empty()) {
			ctx_.counters.add("candidates.refused");
			continue;
		}
		auto it = candidates_.find(peerId);
		if (it == candidates_.end()) {
			// Full: the candidate heard of longest ago makes room, unless this one is older still.
			if (candidates_.size() >= ctx_.config.maxCandidates) {
				auto oldest = std::min_element(candidates_.begin(), candidates_.end(),
							       [](const auto &a, const auto &b) {
								       return a.second.heardAt < b.second.heardAt;
							       });
				ctx_.counters.add("candidates.dropped");
				if (oldest->second.heardAt >= heardAt)
					continue;
				helloSentAt_.erase(oldest->second.endpoint);
				candidates_.erase(oldest);
			}
			it = candidates_.emplace(peerId, Candidate{peerId, ep, "", heardAt}).first;
		}
		Candidate &c = it->second;
		if (heardAt >= c.heardAt) {
			c.endpoint = ep;
			c.heardAt = heardAt;
			auto group = e.find("group");
			if (group != e.end() && group->is_string() &&
			    isValidId(group->get_ref<const std::string &>().data(), group->size()))
				c.group = group->get<std::string>();
		}
	}
}

nlohmann::json Membership::describePeers(const std::vector<std::string> &ids, double now) const
{
	nlohmann::json entries = nlohmann::json::array();
	for (const std::string &id : ids) {
		if (auto p = peers_.find(id); p != peers_.end())
			entries.push_back({{"id", id}, {"endpoint", p->second.endpoint},
					   {"group", p->second.group}, {"age", now - p->second.lastHeard}});
		else if (auto c = candidates_.find(id); c != candidates_.end())
			entries.push_back({{"id", id}, {"endpoint", c->second.endpoint},
					   {"group", c->second.group}, {"age", now - c->second.heardAt}});
		if (entries.size() >= kPeersMax)
			break;
	}
	return entries;
}

OverlayView Membership::view(double now, std::vector<PeerEntry> &alive, std::vector<Candidate> &candidates)
{
	alive.clear();
	candidates.clear();
	for (const auto &[id, peer] : peers_)
		alive.push_back(peer);
	for (const auto &[id, c] : candidates_) {
		candidates.push_back(c);
		candidates.back().contacted = helloSentAt_.count(c.endpoint) > 0;
	}
	OverlayView v;
	v.self = ctx_.config.id;
	v.group = ctx_.group;
	v.now = now;
	v.alive = alive;
	v.candidates = candidates;
	v.local = &ctx_.local;
	v.rng = &ctx_.rng;
	return v;
}

// Ticks come at a steady interval, a fraction of the failure timeout. A gap longer than the timeout and many times the
// usual one is this agent not running (stopped by SIGSTOP, a debugger, a frozen VM), not its peers falling silent:
// what they sent meanwhile is still queued. Their silence is counted from before the gap, so none is dropped for it;
// one that is really gone is dropped a timeout later. The usual interval is learnt from the ticks themselves, so a
// configured tick longer than the timeout is no stall.
void Membership::discountStall(double now)
{
	const double gap = now - lastTick_;
	lastTick_ = now;
	if (gap <= ctx_.config.failureTimeout || gap <= kStallFactor * usualTickGap_) {
		// Two ticks at once (a tick at the start, a late one caught up) teach nothing of the interval.
		if (gap > kTickGapMin)
			usualTickGap_ = gap;
		return;
	}
	ctx_.counters.add("agent.stalls");
	const double stalled = gap - usualTickGap_;
	for (auto &[id, peer] : peers_)
		peer.lastHeard = std::min(now, peer.lastHeard + stalled);
}

void Membership::expire(double now, CoreOutputs &out)
{
	std::vector<std::string> silent;
	for (const auto &[id, peer] : peers_)
		if (peer.lastHeard + ctx_.config.failureTimeout < now)
			silent.push_back(id);
	for (const std::string &id : silent)
		dropPeer(id, "timeout", now, out);

	std::erase_if(candidates_, [&](const auto &entry) {
		return entry.second.heardAt + ctx_.config.failureTimeout < now;
	});
	std::erase_if(helloSentAt_, [&](const auto &entry) {
		return entry.second + ctx_.config.failureTimeout < now;
	});
}

void Membership::maintainView(double now, CoreOutputs &out)
{
	// Alone: keep knocking on the seeds.
	if (peers_.empty() && now >= nextSeedHello_) {
		nextSeedHello_ = now + ctx_.config.joinRetry;
		for (const std::string &endpoint : ctx_.config.seeds) {
			if (endpoint == ctx_.config.endpoint)
				continue;
			Message hello = hooks_.describeSelf("hello");
			helloSentAt_[endpoint] = now;
			ctx_.send(endpoint, std::move(hello), out);
		}
	}

	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	std::vector<std::string> chosen = protocol_.chooseView(view(now, alive, candidates));
	std::vector<std::string> unlinked;
	for (auto &[id, peer] : peers_) {
		peer.inView = std::find(chosen.begin(), chosen.end(), id) != chosen.end();
		if (!peer.inView && !peer.inPeerView)
			unlinked.push_back(id);
	}
	// Neither side wants the link any more: say so, so that the peer does not
	// mistake the silence that follows for a failure.
	for (const std::string &id : unlinked) {
		ctx_.send(peers_.at(id).endpoint, ctx_.envelope("unlink"), out);
		ctx_.counters.add("peers.unlinked");
		out.disconnects.push_back(peers_.at(id).endpoint);
		peers_.erase(id);
	}
	for (const std::string &id : chosen) {
		auto c = candidates_.find(id);
		if (c == candidates_.end() || helloSentAt_.count(c->second.endpoint))
			continue;
		Message hello = hooks_.describeSelf("hello");
		helloSentAt_[c->second.endpoint] = now;
		ctx_.send(c->second.endpoint, std::move(hello), out);
	}
}

void Membership::heartbeat(double now, CoreOutputs &out)
{
	if (now < nextHeartbeat_)
		return;
	nextHeartbeat_ = std::max(nextHeartbeat_ + ctx_.config.heartbeatInterval, now);
	const Message base = hooks_.describeSelf("heartbeat");
	for (const auto &[id, peer] : peers_) {
		if (!peer.inView && !peer.inPeerView)
			continue;
		Message hb = base;
		hb["id"] = ctx_.nextMessageId++;
		hb["in_view"] = peer.inView;
		ctx_.send(peer.endpoint, std::move(hb), out);
	}
}

void Membership::gossip(double now, CoreOutputs &out)
{
	if (ctx_.config.gossipInterval <= 0 || now < nextGossip_)
		return;
	nextGossip_ = std::max(nextGossip_ + ctx_.config.gossipInterval, now);
	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	ProtocolModule::Gossip g = protocol_.chooseGossip(view(now, alive, candidates));
	if (g.targets.empty() || g.carry.empty())
		return;
	nlohmann::json entries = describePeers(g.carry, now);
	for (const std::string &target : g.targets) {
		auto it = peers_.find(target);
		if (it == peers_.end())
			continue;
		Message m = ctx_.envelope("gossip");
		m["peers"] = entries;
		ctx_.send(it->second.endpoint, std::move(m), out);
	}
}

void Membership::onHello(const Message &m, double now, CoreOutputs &out)
{
	PeerEntry *greeter = acceptPeer(m, now, out);
	if (!greeter)
		return;
	greeter->inPeerView = true; // it greets the agents it chose (or its seeds)
	const std::string &from = greeter->id;
	const std::string &endpoint = greeter->endpoint;
	markJoined(from, now, out);

	std::vector<std::string> ids;
	for (const auto &[id, peer] : peers_)
		if (id != from)
			ids.push_back(id);
	std::shuffle(ids.begin(), ids.end(), ctx_.rng);
	if (ids.size() > 16)
		ids.resize(16);
	Message welcome = hooks_.describeSelf("welcome");
	welcome["peers"] = describePeers(ids, now);
	ctx_.send(endpoint, std::move(welcome), out);
}

void Membership::onWelcome(const Message &m, double now, CoreOutputs &out)
{
	if (!acceptPeer(m, now, out))
		return;
	learnCandidates(m["peers"], now);
	markJoined(m["from"].get<std::string>(), now, out);
}

void Membership::markJoined(const std::string &via, double now, CoreOutputs &out)
{
	if (joined_)
		return;
	joined_ = true;
	ctx_.emit({{"type", "joined"}, {"via", via}}, now, out);
	hooks_.joined();
}

void Membership::onGossip(const Message &m, double now, CoreOutputs &out)
{
	(void)out;
	if (auto it = peers_.find(m["from"].get<std::string>()); it != peers_.end())
		it->second.lastHeard = now;
	learnCandidates(m["peers"], now);
}

PeerEntry *Membership::onHeartbeat(const Message &m, double now, CoreOutputs &out)
{
	PeerEntry *peer = acceptPeer(m, now, out);
	if (peer) {
		peer->inPeerView = m.value("in_view", true);
		if (m.value("draining", false))
			drainingPeers_.insert(peer->id);
		else
			drainingPeers_.erase(peer->id);
	}
	return peer;
}

void Membership::onUnlink(const Message &m, double now, CoreOutputs &out)
{
	(void)now;
	auto it = peers_.find(m["from"].get<std::string>());
	if (it == peers_.end())
		return;
	it->second.inPeerView = false;
	if (!it->second.inView) {
		ctx_.counters.add("peers.unlinked");
		out.disconnects.push_back(it->second.endpoint);
		peers_.erase(it);
	}
}

void Membership::onLeave(const Message &m, double now, CoreOutputs &out)
{
	dropPeer(m["from"].get<std::string>(), "leave", now, out);
}

void Membership::onError(const Message &m, double now, CoreOutputs &out)
{
	ctx_.emit({{"type", "peer_error"}, {"peer", m["from"]}, {"code", m["code"]}, {"text", m["text"]}},
	     now, out);
}

void Membership::leave(double now, CoreOutputs &out)
{
	for (const auto &[id, peer] : peers_)
		ctx_.send(peer.endpoint, ctx_.envelope("leave"), out);
	ctx_.emit({{"type", "leaving"}}, now, out);
}

} // namespace malleo
