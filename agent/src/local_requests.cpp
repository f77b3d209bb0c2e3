// SPDX-License-Identifier: Apache-2.0
// The local endpoint (the CLI and the MPI processes of this node) and the remote application endpoint (coordinators
// on other nodes): requests checked, answered, or refused with a reason.
#include "core.h"

#include <fmt/format.h>

namespace malleo {

Message Core::onLocalRequest(const Message &message, double now, CoreOutputs &out)
{
	if (auto rejection = validateMessage(message, Channel::Local))
		return refuse(Channel::Local, *rejection, message, now, out);
	ctx_.counters.add("rx.local." + message["type"].get<std::string>());
	return answer(message, Requester{}, now, out);
}

Message Core::onRemoteRequest(const Message &message, const Requester &from, double now, CoreOutputs &out)
{
	// The application's commands are all a coordinator on another node needs from here; registering, forcing and
	// the rest stay with the processes and the CLI of this node. A bad envelope or version is told as such.
	std::optional<Rejection> rejection = validateMessage(message, Channel::Local);
	const bool command = !rejection && (message["type"] == "poll" || message["type"] == "result");
	if ((rejection && rejection->reason == "wrong_channel") || (!rejection && !command))
		rejection = Rejection{"local_only", "only poll and result are taken from other nodes"};
	if (rejection)
		return refuse(Channel::Remote, *rejection, message, now, out);
	ctx_.counters.add("rx.remote." + message["type"].get<std::string>());
	return answer(message, from, now, out);
}

Message Core::refuse(Channel channel, const Rejection &rejection, const Message &message, double now,
		     CoreOutputs &out)
{
	reject(channel, rejection, &message, now, out);
	Message error = envelope("error");
	error["code"] = rejection.reason;
	error["text"] = rejection.detail;
	return error;
}

Message Core::answer(const Message &message, const Requester &from, double now, CoreOutputs &out)
{
	const std::string &type = message["type"].get_ref<const std::string &>();
	Message reply;
	if (type == "status")
		reply = statusReply(now);
	else if (type == "peers")
		reply = peersReply(now);
	else if (type == "events")
		reply = envelope("events_ok");
	else if (type == "apps")
		reply = appsReply(now);
	else if (type == "force")
		reply = onForce(message, now, out);
	else if (type == "poll")
		reply = onPoll(message, from, now, out);
	else if (type == "result")
		reply = onResult(message, from, now, out);
	else if (type == "register")
		reply = onRegister(message, now, out);
	else if (type == "app_report")
		reply = onAppReport(message, now, out);
	else if (type == "deregister")
		reply = onDeregister(message, now, out);
	else if (type == "drain") {
		drain(now, message.value("deadline", ctx_.config.drainDeadline), out);
		reply = envelope("drain_reply");
		reply["active"] = activeHere();
		reply["deadline"] = drainDeadline_ - now;
	} else
		return refuse(Channel::Local, {"unknown_type", "no handler for " + type}, message, now, out);
	reply["re"] = message["id"];
	return reply;
}

Message Core::statusReply(double now) const
{
	Message m = makeMessage("status_reply", ctx_.config.id, 0);
	m["agent"] = {{"id", ctx_.config.id},
		      {"endpoint", ctx_.config.endpoint},
		      {"app_endpoint", ctx_.config.appEndpoint},
		      {"group", ctx_.group},
		      {"version", ctx_.config.agentVersion},
		      {"uptime", now - ctx_.startedAt},
		      {"joined", membership_.joined()},
		      {"draining", draining_}};
	m["modules"] = moduleNames_;
	m["profile"] = toJson(ctx_.local);
	m["node"] = description_;
	m["applications"] = apps_.size();
	m["peers"] = {{"alive", membership_.peers().size()},
		      {"in_view", std::count_if(membership_.peers().begin(), membership_.peers().end(),
						[](const auto &p) { return p.second.inView; })},
		      {"candidates", membership_.candidates().size()}};
	m["wrm"] = stealing_.status(now);
	m["counters"] = ctx_.counters.toJson();
	return m;
}

Message Core::peersReply(double now) const
{
	Message m = makeMessage("peers_reply", ctx_.config.id, 0);
	nlohmann::json list = nlohmann::json::array();
	for (const auto &[id, peer] : membership_.peers())
		list.push_back({{"id", id},
				{"endpoint", peer.endpoint},
				{"group", peer.group},
				{"in_view", peer.inView},
				{"in_peer_view", peer.inPeerView},
				{"last_heard", now - peer.lastHeard},
				{"profile", toJson(peer.profile)}});
	m["peers"] = std::move(list);
	return m;
}

} // namespace malleo
