// SPDX-License-Identifier: Apache-2.0
// The core's dispatch: messages in to the component that owns them (membership.cpp, work_stealing.cpp, the
// applications and their reconfigurations), ticks to each in turn. The local endpoint is in local_requests.cpp.
#include "core.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace malleo {

namespace {

using PeerHandler = void (*)(Core &, const Message &, double, CoreOutputs &);

} // namespace

Core::Core(CoreConfig config, ProtocolModule &protocol, DecisionModule &decision)
	: ctx_(std::move(config)),
	  protocol_(protocol),
	  decision_(decision),
	  membership_(ctx_, protocol, membershipHooks()),
	  stealing_(ctx_, protocol, decision, membership_, workStealingHooks())
{
	ctx_.group = protocol_.group(ctx_.config.id);
	uint64_t seed = ctx_.config.seed ? ctx_.config.seed : std::hash<std::string>{}(ctx_.config.id);
	ctx_.rng.seed(seed);
}

// What the components ask of the rest of the core.
MembershipHooks Core::membershipHooks()
{
	return {
		.describeSelf = [this](std::string_view type) { return selfDescription(type); },
		.reject = [this](const Rejection &rejection, const Message &m, double now,
				 CoreOutputs &out) { reject(Channel::Peer, rejection, &m, now, out); },
		.accepted = [this](const Message &m, double now) { learnRoots(m, now); },
		.joined = [this] { stealing_.joined(); },
	};
}

WorkStealingHooks Core::workStealingHooks()
{
	return {
		.draining = [this] { return draining_; },
		.hostedShares = [this] { return hostedShares(); },
		.applications = [this] { return applicationList(); },
		.act = [this](const Action &action, double now,
			      CoreOutputs &out) { emitAction(action, "wrm", now, out); },
		.reject = [this](const Rejection &rejection, const Message &m, double now,
				 CoreOutputs &out) { reject(Channel::Peer, rejection, &m, now, out); },
	};
}

// What a hello, welcome or heartbeat says of this agent: where it listens, its group, its profile and the
// applications whose rank 0 it hosts.
Message Core::selfDescription(std::string_view type)
{
	Message m = envelope(type);
	m["endpoint"] = ctx_.config.endpoint;
	m["group"] = ctx_.group;
	m["profile"] = toJson(ctx_.local);
	if (nlohmann::json roots = rootsHere(); !roots.empty())
		m["roots"] = std::move(roots);
	if (type == "heartbeat")
		if (nlohmann::json figures = rootAppsHere(); !figures.empty())
			m["root_apps"] = std::move(figures);
	if (type != "heartbeat")
		m["agent_version"] = ctx_.config.agentVersion;
	if (type == "heartbeat" && draining_)
		m["draining"] = true;
	return m;
}

void Core::start(double now, CoreOutputs &out)
{
	ctx_.startedAt = now;
	membership_.start(now);
	stealing_.start(now);
	nextDecision_ = now + ctx_.config.decisionInterval;
	emit({{"type", "started"}, {"endpoint", ctx_.config.endpoint}, {"group", ctx_.group}}, now, out);
	tick(now, out);
}

void Core::tick(double now, CoreOutputs &out)
{
	membership_.tick(now, out);
	stealing_.tick(now, out);
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
	ctx_.counters.add(fmt::format("rejected.{}.{}", where, rejection.reason));
	nlohmann::json event = {{"type", "rejected"}, {"channel", where},
				{"reason", rejection.reason}, {"detail", rejection.detail}};
	// Answer a known peer, or an agent whose hello names its endpoint, so that a
	// version mismatch is visible on both sides.
	if (channel == Channel::Peer && message && message->is_object()) {
		auto from = message->find("from");
		if (from != message->end() && from->is_string()) {
			event["from"] = printableText(from->get_ref<const std::string &>(), kMaxIdLength);
			std::string endpoint;
			const auto &peers = membership_.peers();
			if (auto it = peers.find(from->get<std::string>()); it != peers.end())
				endpoint = it->second.endpoint;
			// A refused message may hold anything: every field is checked for its type before use.
			auto type = message->find("type");
			auto said = message->find("endpoint");
			if (endpoint.empty() && type != message->end() && *type == "hello" &&
			    said != message->end() && said->is_string() &&
			    membership_.endpointRefusal(said->get<std::string>()).empty())
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
	if (message["from"].get_ref<const std::string &>() == ctx_.config.id) {
		ctx_.counters.add("rejected.peer.from_self");
		return;
	}

	// Each type to the component that owns it.
	using M = const Message &;
	using O = CoreOutputs &;
	static const std::map<std::string, PeerHandler, std::less<>> handlers = {
		{"hello", [](Core &c, M m, double t, O o) { c.membership_.onHello(m, t, o); }},
		{"welcome", [](Core &c, M m, double t, O o) { c.membership_.onWelcome(m, t, o); }},
		{"gossip", [](Core &c, M m, double t, O o) { c.membership_.onGossip(m, t, o); }},
		{"heartbeat", [](Core &c, M m, double t, O o) { c.onHeartbeat(m, t, o); }},
		{"leave", [](Core &c, M m, double t, O o) { c.membership_.onLeave(m, t, o); }},
		{"unlink", [](Core &c, M m, double t, O o) { c.membership_.onUnlink(m, t, o); }},
		{"error", [](Core &c, M m, double t, O o) { c.membership_.onError(m, t, o); }},
		{"wrm", [](Core &c, M m, double t, O o) { c.stealing_.onWrm(m, t, o); }},
		{"wrm_reply", [](Core &c, M m, double t, O o) { c.stealing_.onWrmReply(m, t, o); }},
		{"reconf_request", [](Core &c, M m, double t, O o) { c.onReconfRequest(m, t, o); }},
		{"reconf_result", [](Core &c, M m, double t, O o) { c.onReconfResult(m, t, o); }},
	};
	auto it = handlers.find(type);
	if (it == handlers.end()) {
		reject(Channel::Peer, {"unknown_type", "no handler for " + type}, &message, now, out);
		return;
	}
	ctx_.counters.add("rx." + type);
	// Handlers, and every hop a message is passed on to, see only the fields the schema knows.
	std::size_t dropped = 0;
	const Message known = knownFields(message, Channel::Peer, &dropped);
	if (dropped)
		ctx_.counters.add("fields.unknown_dropped", dropped);
	it->second(*this, known, now, out);
}

// A heartbeat's membership, then what its root agent says of the applications it hosts here.
void Core::onHeartbeat(const Message &m, double now, CoreOutputs &out)
{
	if (membership_.onHeartbeat(m, now, out))
		learnRootFigures(m);
}

void Core::leave(double now, CoreOutputs &out)
{
	membership_.leave(now, out);
}

} // namespace malleo
