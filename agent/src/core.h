// SPDX-License-Identifier: Apache-2.0
// The agent's pure core: messages and ticks in, messages and events out.
//
// The core owns membership (alive peers, gossip candidates, failure detection),
// work stealing (WRM origin, forwarding, TTL, retries) and every counter. It never
// touches a socket, a clock or a file: the daemon (or the simulator) passes the
// time in and carries out what comes back, so a run is reproducible from its
// inputs and seed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <malleo/application.h>
#include <malleo/decision_module.h>
#include <malleo/message.h>
#include <malleo/protocol_module.h>

#include "core_config.h"
#include "counters.h"

namespace malleo {

// What the core asks its adapter to do.
struct CoreOutputs {
	struct Send {
		std::string endpoint; // the peer's inbox
		Message message;
	};
	std::vector<Send> sends;
	std::vector<std::string> disconnects; // endpoints no longer needed
	std::vector<nlohmann::json> events;   // for `malleo events` and the log

	void clear()
	{
		sends.clear();
		disconnects.clear();
		events.clear();
	}
};

class Core
{
public:
	Core(CoreConfig config, ProtocolModule &protocol, DecisionModule &decision);

	// The first call: contacts the seed peers.
	void start(double now, CoreOutputs &out);

	void tick(double now, CoreOutputs &out);

	// A decoded message from the peer port, `routingId` being the sender's
	// socket identity. Validates it before use.
	void onPeerMessage(const Message &message, double now, CoreOutputs &out);

	// A request on the local endpoint; returns the reply.
	Message onLocalRequest(const Message &message, double now, CoreOutputs &out);

	// A request on the remote application endpoint, from a coordinator on another node: `poll` and `result`
	// are answered as on the local endpoint, anything else is refused (`local_only`).
	Message onRemoteRequest(const Message &message, double now, CoreOutputs &out);

	// A message the adapter could not decode (bad header, oversized, ...).
	void onRejected(Channel channel, const Rejection &rejection, double now, CoreOutputs &out);

	// The profiling module's sample; the process count comes from the registry.
	void setLocalProfile(const NodeProfile &profile);
	void setNodeDescription(nlohmann::json description) { description_ = std::move(description); }
	void setModuleNames(nlohmann::json names) { moduleNames_ = std::move(names); }

	// Graceful leave: tells every alive peer.
	void leave(double now, CoreOutputs &out);

	const Counters &counters() const { return counters_; }
	// Counts what the adapters around the core saw (sockets closed to make room, ...).
	void count(const std::string &name, uint64_t n = 1) { counters_.add(name, n); }
	const std::map<std::string, PeerEntry> &peers() const { return peers_; }
	const std::map<std::string, ApplicationInfo> &applications() const { return apps_; }
	const CoreConfig &config() const { return config_; }

private:
	struct OutstandingWrm {
		uint64_t id;
		double sentAt;
	};

	// An application's command slot: one command queued or in flight at a time is
	// the per-application lock of a reconfiguration.
	struct AppCommand {
		uint64_t id = 0;
		std::string op; // split, merge or migrate
		int64_t count = 1;
		std::string node; // empty: any node
		std::vector<int64_t> weights;
		bool sent = false; // handed to the coordinator by a poll: in flight
		double queuedAt = 0.0;
		double sentAt = 0.0;
	};

	Message envelope(std::string_view type);
	void send(const std::string &endpoint, Message message, CoreOutputs &out);
	void emit(nlohmann::json event, double now, CoreOutputs &out);
	// A request answered with an error, the rejection counted and emitted as reject() does.
	Message refuse(Channel channel, const Rejection &rejection, const Message &message, double now,
		       CoreOutputs &out);
	// The reply to a valid request of the local endpoint's schema.
	Message answer(const Message &message, double now, CoreOutputs &out);
	void reject(Channel channel, const Rejection &rejection, const Message *message,
		    double now, CoreOutputs &out);

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
	OverlayView view(double now, std::vector<PeerEntry> &alive,
			 std::vector<Candidate> &candidates);

	void expire(double now, CoreOutputs &out);
	void maintainView(double now, CoreOutputs &out);
	void heartbeat(double now, CoreOutputs &out);
	void gossip(double now, CoreOutputs &out);
	void workStealing(double now, CoreOutputs &out);
	void sendWrm(double now, const char *why, CoreOutputs &out);
	unsigned defaultTtl() const;

	void onHello(const Message &m, double now, CoreOutputs &out);
	void onWelcome(const Message &m, double now, CoreOutputs &out);
	void onGossip(const Message &m, double now, CoreOutputs &out);
	void onHeartbeat(const Message &m, double now, CoreOutputs &out);
	void onLeave(const Message &m, double now, CoreOutputs &out);
	void onUnlink(const Message &m, double now, CoreOutputs &out);
	void onWrm(const Message &m, double now, CoreOutputs &out);
	void onWrmReply(const Message &m, double now, CoreOutputs &out);
	void onError(const Message &m, double now, CoreOutputs &out);

	Message statusReply(double now) const;
	Message peersReply(double now) const;

	// applications.cpp: the registry of local MPI processes
	Message onRegister(const Message &m, double now, CoreOutputs &out);
	Message onAppReport(const Message &m, double now, CoreOutputs &out);
	Message onDeregister(const Message &m, double now, CoreOutputs &out);
	Message appsReply(double now) const;
	// The command path (applications.cpp): `force` from the CLI fills the slot,
	// the coordinator's `poll` takes the command, its `result` frees the slot.
	Message onForce(const Message &m, double now, CoreOutputs &out);
	Message onPoll(const Message &m, double now, CoreOutputs &out);
	Message onResult(const Message &m, double now, CoreOutputs &out);
	void dropCommand(const std::string &appId, const char *why, double now, CoreOutputs &out);
	void decide(double now, CoreOutputs &out);
	void emitAction(const Action &action, const char *trigger, double now, CoreOutputs &out);
	std::vector<ApplicationInfo> applicationList() const;

	CoreConfig config_;
	ProtocolModule &protocol_;
	DecisionModule &decision_;
	std::string group_;
	std::mt19937_64 rng_;

	NodeProfile local_;
	nlohmann::json description_ = nlohmann::json::object();
	nlohmann::json moduleNames_ = nlohmann::json::object();
	Counters counters_;
	uint64_t nextMessageId_ = 1;
	uint64_t nextEventSeq_ = 1;
	double startedAt_ = 0.0;

	std::map<std::string, PeerEntry> peers_;
	std::map<std::string, Candidate> candidates_;
	std::map<std::string, double> helloSentAt_; // endpoint → time
	bool joined_ = false;
	double nextSeedHello_ = 0.0;
	double nextHeartbeat_ = 0.0;
	double nextGossip_ = 0.0;

	std::map<std::string, ApplicationInfo> apps_;
	double nextDecision_ = 0.0;
	std::map<std::string, AppCommand> commands_;	     // app → its queued or in-flight command
	std::map<std::string, nlohmann::json> lastResults_; // app → the result of its last command
	uint64_t nextCommandId_ = 1;

	std::optional<OutstandingWrm> wrm_;
	uint64_t nextWrmId_ = 1;
	double nextWrmAt_ = 0.0;
	double backoff_ = 0.0;
	unsigned unansweredInRow_ = 0;
	bool wrmOnJoinPending_ = false;
};

} // namespace malleo
