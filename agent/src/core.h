// SPDX-License-Identifier: Apache-2.0
// The agent's pure core: messages and ticks in, messages and events out.
//
// The core dispatches what comes in to its components: membership (membership.h: alive peers, gossip candidates,
// failure detection), work stealing (work_stealing.h: WRM origin, forwarding, TTL, retries), and the applications
// and their reconfigurations, still its own (applications.cpp, reconfigurations.cpp, coordinator_seat.cpp,
// command_journal.cpp). What they share, counters included, is in core_context.h. It never touches a socket, a
// clock or a file: the daemon (or the simulator) passes the time in and carries out what comes back, so a run is
// reproducible from its inputs and seed.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <malleo/application.h>
#include <malleo/decision_module.h>
#include <malleo/message.h>
#include <malleo/protocol_module.h>

#include "action_commands.h"
#include "coordinator_seat.h"
#include "core_context.h"
#include "membership.h"
#include "work_stealing.h"

namespace malleo {

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
	// are answered as on the local endpoint, from the application's coordinator only (coordinator_seat.cpp);
	// anything else is refused (`local_only`).
	Message onRemoteRequest(const Message &message, const Requester &from, double now, CoreOutputs &out);

	// A message the adapter could not decode (bad header, oversized, ...).
	void onRejected(Channel channel, const Rejection &rejection, double now, CoreOutputs &out);

	// The profiling module's sample; the process count comes from the registry.
	void setLocalProfile(const NodeProfile &profile);
	// The profiling module's describe(): shown by `status`; its `cpu_cores` (a CPU slice's quota) converts what the
	// processes say they used, in the machine's cores, into the node's (ownLoadInNodeCores).
	void setNodeDescription(nlohmann::json description);
	// {"decision": {"name", "source", "abi_minor"}, ...}: shown by `status`; the decision module's name goes with
	// each request it causes, its ABI minor says whether it has onDrain.
	void setModuleNames(nlohmann::json names);

	// The command slots and the next command number, for the daemon to keep in the run directory
	// (command_journal.cpp): an agent restarted under a running application reports what it had, not nothing.
	nlohmann::json commandJournal() const;
	// Counts the changes of the command slots: the daemon writes the journal only when it moved.
	uint64_t commandChanges() const { return commandChanges_; }
	// At start, what the predecessor's journal held: queued commands are reported lost (they never ran), those in
	// flight await the application's result. An empty string, or one line on a journal it could not read.
	std::string recoverCommands(const nlohmann::json &journal, double now, CoreOutputs &out);

	// Graceful leave: tells every alive peer.
	void leave(double now, CoreOutputs &out);

	// Draining (reconfigurations.cpp): the decision module's onDrain moves the processes away; drainDone() once
	// none is active here or the deadline (seconds from now) passed; the adapter then calls leave() and exits.
	void drain(double now, double deadline, CoreOutputs &out);
	bool draining() const { return draining_; }
	bool hostsActiveProcesses() const { return activeHere() > 0; }
	bool drainDone() const { return drainDone_; }

	// A registered process that ended without deregistering (killed, crashed: the adapter found its pid gone) is
	// forgotten as a deregistered one is, else a drain would wait for it until its deadline.
	void processGone(const std::string &appId, uint32_t rank, double now, CoreOutputs &out);

	const Counters &counters() const { return ctx_.counters; }
	// Counts what the adapters around the core saw (sockets closed to make room, ...).
	void count(const std::string &name, uint64_t n = 1) { ctx_.counters.add(name, n); }
	const std::map<std::string, PeerEntry> &peers() const { return membership_.peers(); }
	const std::map<std::string, ApplicationInfo> &applications() const { return apps_; }
	const CoreConfig &config() const { return ctx_.config; }
	// The replies to `status`, `peers` and `apps`, read without counting a request (the daemon's metrics).
	Message statusReply(double now) const;
	Message peersReply(double now) const;
	Message appsReply(double now) const;

private:
	// Who asked for a reconfiguration, and why: carried from the decision to its result.
	struct Asker {
		std::string origin;	// the agent that asked (this one for `force` on its local endpoint)
		uint64_t request = 0;	// the origin's number for the request; 0: a local `force`
		std::string trigger;	// force, wrm, tick or drain
		std::string kind;	// the action's kind (transfer, merge, swap, ...); "force" for a person's
		std::string why;	// one line
		std::string decision;	// the module that chose it
	};

	// An application's command slot: one command queued or in flight at a time is
	// the per-application lock of a reconfiguration.
	struct AppCommand {
		uint64_t id = 0;
		Command command;
		Asker asker;
		bool sent = false; // handed to the coordinator by a poll: in flight
		// Whom it was handed to: only that coordinator reports its result. connection empty: any of that node's
		// (a command recovered from the journal); sentToKnown false: anyone's (a journal that did not say).
		Requester sentTo;
		bool sentToKnown = false;
		// In flight when this agent's predecessor in the run directory died: its result is awaited until then.
		double recoveredUntil = 0.0;
		double queuedAt = 0.0;
		double sentAt = 0.0;
	};

	// A request this agent sent to an application's root agent and awaits the result of.
	struct PendingRequest {
		uint64_t id = 0;
		std::string root;
		double sentAt = 0.0;
	};

	// Where an application's rank 0 is, as a peer's hello, welcome or heartbeat said.
	struct RootSeen {
		std::string agent;
		double heardAt = 0.0;
	};

	// What an application's root agent said of it in its last heartbeat (`root_apps`): only the root hears its
	// coordinator's poll, so only it knows the active size (the registry's is the launch's world, parked spares
	// included), the iteration times, the iterations left and the last resize's cost.
	struct RootFigures {
		std::string agent;
		int64_t size = 0;
		int64_t remaining = -1;
		double cost = 0.0;
		std::vector<IterationSample> sizes; // as the root's heartbeats said them, one per size, oldest first
	};

	Message envelope(std::string_view type) { return ctx_.envelope(type); }
	// A hello, welcome or heartbeat: Membership's describeSelf.
	Message selfDescription(std::string_view type);
	void send(const std::string &endpoint, Message message, CoreOutputs &out)
	{
		ctx_.send(endpoint, std::move(message), out);
	}
	void emit(nlohmann::json event, double now, CoreOutputs &out) { ctx_.emit(std::move(event), now, out); }
	// A request answered with an error, the rejection counted and emitted as reject() does.
	Message refuse(Channel channel, const Rejection &rejection, const Message &message, double now,
		       CoreOutputs &out);
	// The reply to a valid request of the local endpoint's schema.
	Message answer(const Message &message, const Requester &from, double now, CoreOutputs &out);
	void reject(Channel channel, const Rejection &rejection, const Message *message,
		    double now, CoreOutputs &out);

	MembershipHooks membershipHooks();
	void onHeartbeat(const Message &m, double now, CoreOutputs &out);
	WorkStealingHooks workStealingHooks();

	// applications.cpp: the registry of local MPI processes
	Message onRegister(const Message &m, double now, CoreOutputs &out);
	Message onAppReport(const Message &m, double now, CoreOutputs &out);
	Message onDeregister(const Message &m, double now, CoreOutputs &out);
	void removeProcess(const std::string &appId, uint32_t rank, const std::string &why, double now,
			   CoreOutputs &out);
	// The command path (applications.cpp): `force` from the CLI fills the slot,
	// the coordinator's `poll` takes the command, its `result` frees the slot.
	Message onForce(const Message &m, double now, CoreOutputs &out);
	Message onPoll(const Message &m, const Requester &from, double now, CoreOutputs &out);
	Message onResult(const Message &m, const Requester &from, double now, CoreOutputs &out);
	// Frees an application's command slot before its result: `code` is dropped (rank 0 left) or lost (the agent
	// restarted under it); the event command_<code> and the asker's failed result say why.
	void dropCommand(const std::string &appId, const std::string &code, const std::string &why, double now,
			 CoreOutputs &out);
	// A command recovered in flight whose result will not come (the coordinator `polled` again, or the wait ended).
	void settleRecovered(const std::string &appId, bool polled, double now, CoreOutputs &out);
	void progress(const ApplicationInfo &app, int64_t iteration, double now, CoreOutputs &out);
	void decide(double now, CoreOutputs &out);
	void emitAction(const Action &action, const char *trigger, double now, CoreOutputs &out);
	std::vector<ApplicationInfo> applicationList() const;
	nlohmann::json hostedShares() const;
	bool hostsRank0(const ApplicationInfo &app) const;

	// reconfigurations.cpp: actions become requests to the root agent, which queues them as commands and tells
	// everyone involved the result.
	void carryOut(const Action &action, const char *trigger, double now, CoreOutputs &out);
	// Sends the request to the root agent (or queues it here); its number, 0 when no root is known.
	uint64_t ask(const std::string &appId, const Command &command, Asker asker, double now, CoreOutputs &out);
	// The root's side of a request: queues it, or returns the refusal {code, text}.
	std::optional<std::pair<std::string, std::string>> queue(const std::string &appId, const Command &command,
								  const Asker &asker, double now, CoreOutputs &out);
	void onReconfRequest(const Message &m, double now, CoreOutputs &out);
	void onReconfResult(const Message &m, double now, CoreOutputs &out);
	// A result (ok, failed or refused) to the origin and the agents of the nodes it names, and here.
	void tellResult(Message result, double now, CoreOutputs &out);
	void applyResult(const Message &m, double now, CoreOutputs &out);
	Message resultMessage(const std::string &appId, const Command &command, const Asker &asker) const;
	std::string rootAgentOf(const std::string &appId) const;
	// The applications registered here and those a live peer hosts the rank 0 of, sorted: what `force` may name.
	std::vector<std::string> knownApplications() const;
	nlohmann::json rootsHere() const;
	std::map<std::string, int64_t> powerWeights() const;
	void learnRoots(const Message &m, double now);
	// root_figures.cpp: the root's figures of its applications, told in its heartbeats to the agents hosting their
	// other processes, which show them to their decision module (and `apps`) in place of the registry's.
	nlohmann::json rootAppsHere() const;
	void learnRootFigures(const Message &m);
	void applyRootFigures(ApplicationInfo &app) const;
	void resultToRootFigures(const Message &m);
	void expireRequests(double now, CoreOutputs &out);
	bool drainFinished(double now, CoreOutputs &out);
	void askDrain(const OverlayView &view, std::vector<ApplicationInfo> apps, double now, CoreOutputs &out);
	void tellDecision(const Message &m, double now);
	int64_t activeHere() const;

	CoreContext ctx_;
	ProtocolModule &protocol_;
	DecisionModule &decision_;
	Membership membership_;
	WorkStealing stealing_;

	nlohmann::json description_ = nlohmann::json::object();
	double cpuCores_ = 0.0; // description_'s cpu_cores; 0: the node's cores are the machine's
	nlohmann::json moduleNames_ = nlohmann::json::object();
	std::string decisionName_;
	uint32_t decisionAbiMinor_ = MALLEO_MODULE_ABI_MINOR; // built-ins, and cores built without module names
	static constexpr std::size_t kSizesKept = 16; // configurations remembered per application (sweetspot's fit needs 3)

	std::map<std::string, ApplicationInfo> apps_;
	double nextDecision_ = 0.0;
	// app → the seconds its last reconfiguration took (its result's duration), not yet taken out of an iteration
	// time: the iteration that held it is measured without it, as ReSHAPE keeps redistribution apart.
	std::map<std::string, double> reconfigurationToDiscount_;
	std::map<std::string, AppCommand> commands_;	     // app → its queued or in-flight command
	std::map<std::string, nlohmann::json> lastResults_; // app → the result of its last command
	uint64_t nextCommandId_ = 1;
	uint64_t commandChanges_ = 0;
	struct Progress {
		int64_t iteration = 0;
		double at = 0.0;
	};
	std::map<std::string, Progress> progress_; // app → the coordinator's probe count at the last progress event
	std::map<std::string, PendingRequest> pending_; // app → the request this agent awaits a result of
	std::map<std::string, double> heldUntil_;	 // app → no decision asks for it before then
	std::map<std::string, RootSeen> rootOf_;	 // app → the peer hosting its rank 0
	std::map<std::string, RootFigures> rootFigures_; // app hosted here → what its root agent said of it
	CoordinatorSeats seats_{ctx_.counters}; // app → its coordinator, here at its root agent
	uint64_t nextRequestId_ = 1;
	bool draining_ = false;
	double quietSince_ = -1.0;	       // draining: since when no process has been active here
	bool drainDone_ = false;
	bool drainUnanswered_ = false; // said once: the module cannot be asked
	double drainStartedAt_ = 0.0;
	double drainDeadline_ = 0.0;
};

} // namespace malleo
