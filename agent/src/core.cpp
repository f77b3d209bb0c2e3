// SPDX-License-Identifier: Apache-2.0
// The core's messages in and out and membership; the local endpoint is in local_requests.cpp, work stealing in
// work_stealing.cpp, the registry of applications in applications.cpp, reconfigurations in reconfigurations.cpp.
#include "core.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace malleo {

namespace {

using PeerHandler = void (Core::*)(const Message &, double, CoreOutputs &);

} // namespace

Core::Core(CoreConfig config, ProtocolModule &protocol, DecisionModule &decision)
	: config_(std::move(config)), protocol_(protocol), decision_(decision)
{
	group_ = protocol_.group(config_.id);
	uint64_t seed = config_.seed ? config_.seed : std::hash<std::string>{}(config_.id);
	rng_.seed(seed);
}

Message Core::envelope(std::string_view type)
{
	return makeMessage(type, config_.id, nextMessageId_++);
}

// What a hello, welcome or heartbeat says of this agent: where it listens, its group, its profile and the
// applications whose rank 0 it hosts.
Message Core::selfDescription(std::string_view type)
{
	Message m = envelope(type);
	m["endpoint"] = config_.endpoint;
	m["group"] = group_;
	m["profile"] = toJson(local_);
	if (nlohmann::json roots = rootsHere(); !roots.empty())
		m["roots"] = std::move(roots);
	if (type == "heartbeat")
		if (nlohmann::json figures = rootAppsHere(); !figures.empty())
			m["root_apps"] = std::move(figures);
	if (type != "heartbeat")
		m["agent_version"] = config_.agentVersion;
	return m;
}

void Core::send(const std::string &endpoint, Message message, CoreOutputs &out)
{
	counters_.add("tx." + message["type"].get<std::string>());
	out.sends.push_back({endpoint, std::move(message)});
}

void Core::emit(nlohmann::json event, double now, CoreOutputs &out)
{
	event["seq"] = nextEventSeq_++;
	event["t"] = now - startedAt_;
	event["agent"] = config_.id;
	out.events.push_back(std::move(event));
}

void Core::start(double now, CoreOutputs &out)
{
	startedAt_ = now;
	lastTick_ = now;
	nextSeedHello_ = now;
	nextHeartbeat_ = now + config_.heartbeatInterval;
	nextGossip_ = now + config_.gossipInterval;
	nextWrmAt_ = now;
	nextDecision_ = now + config_.decisionInterval;
	backoff_ = config_.backoffInitial;
	emit({{"type", "started"}, {"endpoint", config_.endpoint}, {"group", group_}}, now, out);
	tick(now, out);
}

void Core::tick(double now, CoreOutputs &out)
{
	discountStall(now);
	expire(now, out);
	maintainView(now, out);
	heartbeat(now, out);
	gossip(now, out);
	workStealing(now, out);
	expireRequests(now, out);
	decide(now, out);
}

// ---------------------------------------------------------------- messages in

void Core::onRejected(Channel channel, const Rejection &rejection, double now, CoreOutputs &out)
{
	reject(channel, rejection, nullptr, now, out);
}

void Core::reject(Channel channel, const Rejection &rejection, const Message *message,
		  double now, CoreOutputs &out)
{
	const char *where = channel == Channel::Peer ? "peer" : channel == Channel::Local ? "local" : "remote";
	counters_.add(fmt::format("rejected.{}.{}", where, rejection.reason));
	nlohmann::json event = {{"type", "rejected"}, {"channel", where},
				{"reason", rejection.reason}, {"detail", rejection.detail}};
	// Answer a known peer, or an agent whose hello names its endpoint, so that a
	// version mismatch is visible on both sides.
	if (channel == Channel::Peer && message && message->is_object()) {
		auto from = message->find("from");
		if (from != message->end() && from->is_string()) {
			event["from"] = printableText(from->get_ref<const std::string &>(), kMaxIdLength);
			std::string endpoint;
			if (auto it = peers_.find(from->get<std::string>()); it != peers_.end())
				endpoint = it->second.endpoint;
			// A refused message may hold anything: every field is checked for its type before use.
			auto type = message->find("type");
			auto said = message->find("endpoint");
			if (endpoint.empty() && type != message->end() && *type == "hello" &&
			    said != message->end() && said->is_string() &&
			    endpointRefusal(said->get<std::string>()).empty())
				endpoint = said->get<std::string>();
			bool answerable = rejection.reason == "unknown_type" ||
					  rejection.reason == "newer_version";
			if (!endpoint.empty() && answerable) {
				Message error = envelope("error");
				error["code"] = rejection.reason;
				error["text"] = rejection.detail;
				send(endpoint, std::move(error), out);
			}
		}
	}
	emit(std::move(event), now, out);
}

void Core::onPeerMessage(const Message &message, double now, CoreOutputs &out)
{
	if (auto rejection = validateMessage(message, Channel::Peer)) {
		reject(Channel::Peer, *rejection, &message, now, out);
		return;
	}
	const std::string &type = message["type"].get_ref<const std::string &>();
	if (message["from"].get_ref<const std::string &>() == config_.id) {
		counters_.add("rejected.peer.from_self");
		return;
	}

	static const std::map<std::string, PeerHandler, std::less<>> handlers = {
		{"hello", &Core::onHello},	   {"welcome", &Core::onWelcome},
		{"gossip", &Core::onGossip},	   {"heartbeat", &Core::onHeartbeat},
		{"leave", &Core::onLeave},	   {"unlink", &Core::onUnlink},
		{"wrm", &Core::onWrm},
		{"wrm_reply", &Core::onWrmReply}, {"error", &Core::onError},
		{"reconf_request", &Core::onReconfRequest}, {"reconf_result", &Core::onReconfResult},
	};
	auto it = handlers.find(type);
	if (it == handlers.end()) {
		reject(Channel::Peer, {"unknown_type", "no handler for " + type}, &message, now, out);
		return;
	}
	counters_.add("rx." + type);
	// Handlers, and every hop a message is passed on to, see only the fields the schema knows.
	std::size_t dropped = 0;
	const Message known = knownFields(message, Channel::Peer, &dropped);
	if (dropped)
		counters_.add("fields.unknown_dropped", dropped);
	(this->*(it->second))(known, now, out);
}

// A peer names endpoints (its own, its peers', a WRM's origin) that this agent then connects to and writes into:
// a TCP address a peer can reach, or an ipc:// socket only when the configuration names it as a seed or allows
// peers' ipc endpoints (agents of one host): never, say, another agent's local endpoint.
std::string Core::endpointRefusal(const std::string &endpoint) const
{
	// A malformed tcp:// address fails at connect, which the transport survives; other transports are refused here,
	// but for this agent's own (the simulator's sim://).
	const std::string own = config_.endpoint.substr(0, config_.endpoint.find("://") + 3);
	if (!endpoint.starts_with("tcp://") && !endpoint.starts_with("ipc://") &&
	    !(own.size() > 3 && own != "ipc://" && endpoint.starts_with(own)))
		return fmt::format("'{}': only tcp:// (or ipc://) endpoints are taken from peers", printableText(endpoint));
	if (endpoint.starts_with("ipc://") && !config_.peerIpc &&
	    std::find(config_.seeds.begin(), config_.seeds.end(), endpoint) == config_.seeds.end())
		return fmt::format("'{}': an ipc:// endpoint from a peer (membership.peer_ipc is off)", printableText(endpoint));
	return {};
}

// ---------------------------------------------------------------- membership

PeerEntry *Core::refreshPeer(const std::string &id, const std::string &endpoint,
			     const std::string &group, const NodeProfile &profile, double now,
			     CoreOutputs &out)
{
	auto it = peers_.find(id);
	if (it == peers_.end()) {
		if (peers_.size() >= config_.maxPeers && !evictPeer(now, out)) {
			counters_.add("peers.refused_full");
			return nullptr;
		}
		it = peers_.try_emplace(id).first;
		it->second.id = id;
		counters_.add("peers.joined");
		emit({{"type", "peer_up"}, {"peer", id}, {"endpoint", endpoint}}, now, out);
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
bool Core::evictPeer(double now, CoreOutputs &out)
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

PeerEntry *Core::acceptPeer(const Message &m, double now, CoreOutputs &out)
{
	NodeProfile profile;
	const std::string &type = m["type"].get_ref<const std::string &>();
	if (std::string err = fromJson(m["profile"], profile); !err.empty()) {
		reject(Channel::Peer, {"bad_field", type + ": " + err}, &m, now, out);
		return nullptr;
	}
	if (std::string err = endpointRefusal(m["endpoint"].get<std::string>()); !err.empty()) {
		reject(Channel::Peer, {"endpoint_refused", type + ": " + err}, &m, now, out);
		return nullptr;
	}
	PeerEntry *peer = refreshPeer(m["from"].get<std::string>(), m["endpoint"].get<std::string>(),
				      m.value("group", ""), profile, now, out);
	if (peer)
		learnRoots(m, now);
	return peer;
}

void Core::dropPeer(const std::string &id, const char *why, double now, CoreOutputs &out)
{
	auto it = peers_.find(id);
	if (it == peers_.end())
		return;
	counters_.add(fmt::format("peers.dropped.{}", why));
	emit({{"type", "peer_down"}, {"peer", id}, {"why", why},
	      {"silent_for", now - it->second.lastHeard}},
	     now, out);
	out.disconnects.push_back(it->second.endpoint);
	drainingPeers_.erase(it->first);
	peers_.erase(it);
}

void Core::learnCandidates(const nlohmann::json &entries, double now)
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
		if (peerId == config_.id || peers_.count(peerId) || heardAt + config_.failureTimeout < now)
			continue;
		if (!isValidId(peerId.data(), peerId.size()) || ep.size() > 256 || !endpointRefusal(ep).empty()) {
			counters_.add("candidates.refused");
			continue;
		}
		auto it = candidates_.find(peerId);
		if (it == candidates_.end()) {
			// Full: the candidate heard of longest ago makes room, unless this one is older still.
			if (candidates_.size() >= config_.maxCandidates) {
				auto oldest = std::min_element(candidates_.begin(), candidates_.end(),
							       [](const auto &a, const auto &b) {
								       return a.second.heardAt < b.second.heardAt;
							       });
				counters_.add("candidates.dropped");
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

nlohmann::json Core::describePeers(const std::vector<std::string> &ids, double now) const
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

OverlayView Core::view(double now, std::vector<PeerEntry> &alive, std::vector<Candidate> &candidates)
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
	v.self = config_.id;
	v.group = group_;
	v.now = now;
	v.alive = alive;
	v.candidates = candidates;
	v.local = &local_;
	v.rng = &rng_;
	return v;
}

// Ticks come at a steady interval, a fraction of the failure timeout. A gap longer than the timeout and many times the
// usual one is this agent not running (stopped by SIGSTOP, a debugger, a frozen VM), not its peers falling silent:
// what they sent meanwhile is still queued. Their silence is counted from before the gap, so none is dropped for it;
// one that is really gone is dropped a timeout later. The usual interval is learnt from the ticks themselves, so a
// configured tick longer than the timeout is no stall.
void Core::discountStall(double now)
{
	const double gap = now - lastTick_;
	lastTick_ = now;
	if (gap <= config_.failureTimeout || gap <= kStallFactor * usualTickGap_) {
		// Two ticks at once (a tick at the start, a late one caught up) teach nothing of the interval.
		if (gap > kTickGapMin)
			usualTickGap_ = gap;
		return;
	}
	counters_.add("agent.stalls");
	const double stalled = gap - usualTickGap_;
	for (auto &[id, peer] : peers_)
		peer.lastHeard = std::min(now, peer.lastHeard + stalled);
}

void Core::expire(double now, CoreOutputs &out)
{
	std::vector<std::string> silent;
	for (const auto &[id, peer] : peers_)
		if (peer.lastHeard + config_.failureTimeout < now)
			silent.push_back(id);
	for (const std::string &id : silent)
		dropPeer(id, "timeout", now, out);

	std::erase_if(candidates_, [&](const auto &entry) {
		return entry.second.heardAt + config_.failureTimeout < now;
	});
	std::erase_if(helloSentAt_, [&](const auto &entry) {
		return entry.second + config_.failureTimeout < now;
	});
}

void Core::maintainView(double now, CoreOutputs &out)
{
	// Alone: keep knocking on the seeds.
	if (peers_.empty() && now >= nextSeedHello_) {
		nextSeedHello_ = now + config_.joinRetry;
		for (const std::string &endpoint : config_.seeds) {
			if (endpoint == config_.endpoint)
				continue;
			Message hello = selfDescription("hello");
			helloSentAt_[endpoint] = now;
			send(endpoint, std::move(hello), out);
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
		send(peers_.at(id).endpoint, envelope("unlink"), out);
		counters_.add("peers.unlinked");
		out.disconnects.push_back(peers_.at(id).endpoint);
		peers_.erase(id);
	}
	for (const std::string &id : chosen) {
		auto c = candidates_.find(id);
		if (c == candidates_.end() || helloSentAt_.count(c->second.endpoint))
			continue;
		Message hello = selfDescription("hello");
		helloSentAt_[c->second.endpoint] = now;
		send(c->second.endpoint, std::move(hello), out);
	}
}

void Core::heartbeat(double now, CoreOutputs &out)
{
	if (now < nextHeartbeat_)
		return;
	nextHeartbeat_ = std::max(nextHeartbeat_ + config_.heartbeatInterval, now);
	Message base = selfDescription("heartbeat");
	if (draining_)
		base["draining"] = true;
	for (const auto &[id, peer] : peers_) {
		if (!peer.inView && !peer.inPeerView)
			continue;
		Message hb = base;
		hb["id"] = nextMessageId_++;
		hb["in_view"] = peer.inView;
		send(peer.endpoint, std::move(hb), out);
	}
}

void Core::gossip(double now, CoreOutputs &out)
{
	if (config_.gossipInterval <= 0 || now < nextGossip_)
		return;
	nextGossip_ = std::max(nextGossip_ + config_.gossipInterval, now);
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
		Message m = envelope("gossip");
		m["peers"] = entries;
		send(it->second.endpoint, std::move(m), out);
	}
}

void Core::onHello(const Message &m, double now, CoreOutputs &out)
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
	std::shuffle(ids.begin(), ids.end(), rng_);
	if (ids.size() > 16)
		ids.resize(16);
	Message welcome = selfDescription("welcome");
	welcome["peers"] = describePeers(ids, now);
	send(endpoint, std::move(welcome), out);
}

void Core::onWelcome(const Message &m, double now, CoreOutputs &out)
{
	if (!acceptPeer(m, now, out))
		return;
	learnCandidates(m["peers"], now);
	markJoined(m["from"].get<std::string>(), now, out);
}

void Core::markJoined(const std::string &via, double now, CoreOutputs &out)
{
	if (joined_)
		return;
	joined_ = true;
	emit({{"type", "joined"}, {"via", via}}, now, out);
	wrmOnJoinPending_ = config_.wrmOnJoin;
}

void Core::onGossip(const Message &m, double now, CoreOutputs &out)
{
	(void)out;
	if (auto it = peers_.find(m["from"].get<std::string>()); it != peers_.end())
		it->second.lastHeard = now;
	learnCandidates(m["peers"], now);
}

void Core::onHeartbeat(const Message &m, double now, CoreOutputs &out)
{
	if (PeerEntry *peer = acceptPeer(m, now, out)) {
		learnRootFigures(m);
		peer->inPeerView = m.value("in_view", true);
		if (m.value("draining", false))
			drainingPeers_.insert(peer->id);
		else
			drainingPeers_.erase(peer->id);
	}
}

void Core::onUnlink(const Message &m, double now, CoreOutputs &out)
{
	(void)now;
	auto it = peers_.find(m["from"].get<std::string>());
	if (it == peers_.end())
		return;
	it->second.inPeerView = false;
	if (!it->second.inView) {
		counters_.add("peers.unlinked");
		out.disconnects.push_back(it->second.endpoint);
		peers_.erase(it);
	}
}

void Core::onLeave(const Message &m, double now, CoreOutputs &out)
{
	dropPeer(m["from"].get<std::string>(), "leave", now, out);
}

void Core::onError(const Message &m, double now, CoreOutputs &out)
{
	emit({{"type", "peer_error"}, {"peer", m["from"]}, {"code", m["code"]}, {"text", m["text"]}},
	     now, out);
}

void Core::leave(double now, CoreOutputs &out)
{
	for (const auto &[id, peer] : peers_)
		send(peer.endpoint, envelope("leave"), out);
	emit({{"type", "leaving"}}, now, out);
}

} // namespace malleo
