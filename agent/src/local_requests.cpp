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
	counters_.add("rx.local." + message["type"].get<std::string>());
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
	counters_.add("rx.remote." + message["type"].get<std::string>());
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
		drain(now, message.value("deadline", config_.drainDeadline), out);
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
	Message m = makeMessage("status_reply", config_.id, 0);
	m["agent"] = {{"id", config_.id},
		      {"endpoint", config_.endpoint},
		      {"app_endpoint", config_.appEndpoint},
		      {"group", group_},
		      {"version", config_.agentVersion},
		      {"uptime", now - startedAt_},
		      {"joined", joined_},
		      {"draining", draining_}};
	m["modules"] = moduleNames_;
	m["profile"] = toJson(local_);
	m["node"] = description_;
	m["applications"] = apps_.size();
	m["peers"] = {{"alive", peers_.size()},
		      {"in_view", std::count_if(peers_.begin(), peers_.end(),
						[](const auto &p) { return p.second.inView; })},
		      {"candidates", candidates_.size()}};
	m["wrm"] = {{"outstanding", wrm_.has_value()},
		    {"backoff", backoff_},
		    {"next_in", std::max(0.0, nextWrmAt_ - now)}};
	m["counters"] = counters_.toJson();
	return m;
}

Message Core::peersReply(double now) const
{
	Message m = makeMessage("peers_reply", config_.id, 0);
	nlohmann::json list = nlohmann::json::array();
	for (const auto &[id, peer] : peers_)
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
