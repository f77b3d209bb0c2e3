// SPDX-License-Identifier: Apache-2.0
#include "daemon.h"

#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <malleo/run_dir.h>

#include "accept_guard.h"
#include "metrics.h"
#include "printable_log.h"
#include "private_files.h"

namespace malleo {

namespace {

namespace fs = std::filesystem;

// Largest batch handled per wakeup, so one flooding socket cannot starve timers.
constexpr int kBatch = 256;
// Events kept for a client that subscribes later (`malleo events` shows the recent past).
constexpr std::size_t kRecentEvents = 256;
// What an ipc path may hold (sockaddr_un.sun_path minus the terminator).
constexpr std::size_t kMaxSocketPath = 107;

} // namespace

Daemon::Daemon(AgentConfig config, ProfilingModule &profiling, ProtocolModule &protocol,
	       DecisionModule &decision, nlohmann::json moduleNames)
	: config_(std::move(config)), profiling_(profiling), protocol_(protocol),
	  decision_(decision), moduleNames_(std::move(moduleNames)), seedWatch_(config_.core.seeds),
	  keyRing_(config_.security)
{
	log_ = spdlog::get("agent");
	if (!log_)
		log_ = makePrintableLogger("agent");
}

// A process killed before MPI_Finalize never deregisters. Its pid, once seen alive and now gone, says it ended. A
// pid never seen alive here (a process registered from another PID namespace) is left alone: this host cannot tell.
void Daemon::forgetEndedProcesses(double t)
{
	std::set<std::tuple<std::string, uint32_t, int64_t>> alive;
	std::vector<std::pair<std::string, uint32_t>> ended;
	for (const auto &[appId, app] : core_->applications())
		for (const ProcessInfo &p : app.local) {
			if (p.pid <= 0)
				continue;
			auto key = std::make_tuple(appId, p.rank, p.pid);
			if (processRuns(p.pid))
				alive.insert(key);
			else if (pidsSeenAlive_.contains(key))
				ended.emplace_back(appId, p.rank);
		}
	pidsSeenAlive_ = std::move(alive);
	for (const auto &[appId, rank] : ended)
		core_->processGone(appId, rank, t, out_);
	if (!ended.empty())
		apply(out_);
}

double Daemon::now() const
{
	using namespace std::chrono;
	return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string Daemon::prepareRunDir()
{
	if (std::string err = preparePrivateDir(config_.runDir); !err.empty())
		return err;
	agentFile_ = (fs::path(config_.runDir) / "agent.json").string();
	socketPath_ = (fs::path(config_.runDir) / kAgentSocketName).string();
	if (socketPath_.size() > kMaxSocketPath)
		return fmt::format("run directory '{}': the socket path would exceed {} characters; "
				   "choose a shorter --run-dir",
				   config_.runDir, kMaxSocketPath);

	std::ifstream existing(agentFile_);
	if (existing) {
		nlohmann::json info = nlohmann::json::parse(existing, nullptr, false);
		if (info.is_object() && info["pid"].is_number_integer() && info["pid"].get<long>() != getpid() &&
		    isLiveAgent(info["pid"].get<long>()))
			return fmt::format("another agent (pid {}) runs in '{}'", info["pid"].get<long>(),
					   config_.runDir);
	}
	std::error_code ec;
	fs::remove(socketPath_, ec); // left behind by an agent that was killed
	return {};
}

void Daemon::writeAgentFile(const std::string &localEndpoint)
{
	nlohmann::json info = {{"id", config_.core.id},
			       {"endpoint", config_.core.endpoint},
			       {"local", localEndpoint},
			       {"app_remote", config_.core.appEndpoint},
			       {"pid", getpid()}};
	if (metrics_)
		info["metrics"] = metrics_->url();
	// For the coordinators of this node's applications (the PCM bridge): the key to reach this agent's remote
	// endpoint with, and this node's own, to speak as this node on other nodes' (agent.json is 0600 in a 0700 dir).
	if (transport_->curve()) {
		info["public_key"] = transport_->publicKey();
		info["secret_key_file"] = std::filesystem::absolute(config_.security.secretKeyFile).string();
	}
	if (std::string err = writePrivateFile(agentFile_, info.dump(2) + "\n"); !err.empty())
		log_->error("cannot write agent.json: {}", err);
}

void Daemon::removeRunFiles()
{
	std::error_code ec;
	fs::remove(agentFile_, ec);
	fs::remove(socketPath_, ec);
}

void Daemon::apply(CoreOutputs &out)
{
	for (const std::string &endpoint : out.disconnects)
		transport_->disconnectPeer(endpoint);
	for (const CoreOutputs::Send &s : out.sends) {
		const std::string &type = s.message["type"].get_ref<const std::string &>();
		const std::string serverKey = transport_->curve() ? serverKeyFor(s.endpoint) : std::string();
		if (transport_->curve() && serverKey.empty()) {
			core_->count("auth.no_server_key");
			LogLimiter::Verdict v = rejectionLog_.admit("no_key." + s.endpoint, now());
			if (v.log)
				log_->warn("no {} to {}: no public key known for the node there (a seed in agent.peers is "
					   "written NODE@ENDPOINT; is the node's .pub in security.allowed_keys?)",
					   type, s.endpoint);
		} else if (!transport_->sendPeer(s.endpoint, serverKey, s.message))
			log_->debug("dropped {} to {}: not connected or queue full", type, s.endpoint);
		if (type == "hello")
			if (std::string unanswered = seedWatch_.helloSent(s.endpoint, now()); !unanswered.empty())
				log_->warn("{}", unanswered);
	}
	if (uint64_t closed = transport_->takeSocketsClosedForRoom())
		core_->count("sockets.closed_for_room", closed);
	for (const nlohmann::json &event : out.events) {
		const std::string &type = event["type"].get_ref<const std::string &>();
		if (type == "peer_up")
			seedWatch_.peerUp();
		if (type == "rejected")
			logRejection(event);
		else if (type == "peer_up" || type == "peer_down" || type == "joined" ||
			 type == "wrm_answered" || type == "wrm_reply" || type == "action" ||
			 type == "app_registered" || type == "app_gone" || type == "process_gone" || type.starts_with("command_") ||
			 type.starts_with("reconf_") || type.starts_with("drain") || type == "action_skipped")
			log_->info("{}", event.dump());
		else
			log_->debug("{}", event.dump());
		eventFiles_.write(event);

		Message m = makeMessage("event", config_.core.id, event["seq"].get<uint64_t>());
		m["event"] = event;
		recentEvents_.push_back(m);
		if (recentEvents_.size() > kRecentEvents)
			recentEvents_.pop_front();
		// A subscriber that reads slower than events come loses its subscription rather than stalls the agent.
		for (auto it = subscribers_.begin(); it != subscribers_.end();) {
			if (transport_->sendLocal(*it, m)) {
				++it;
			} else {
				core_->count("replies.dropped.local");
				core_->count("events.subscribers_dropped");
				it = subscribers_.erase(it);
			}
		}
	}
	out.clear();
	saveCommands();
}

void Daemon::recoverCommands(double t)
{
	commandsFile_ = (fs::path(config_.runDir) / "commands.json").string();
	std::ifstream file(commandsFile_);
	if (!file)
		return;
	const nlohmann::json journal = nlohmann::json::parse(file, nullptr, false);
	if (std::string problem = core_->recoverCommands(journal, t, out_); !problem.empty())
		log_->warn("{}: {}", commandsFile_, problem);
}

// Written when a command slot changes, so a successor started in this run directory knows what this agent held.
void Daemon::saveCommands()
{
	if (!core_ || commandsFile_.empty() || core_->commandChanges() == savedChanges_)
		return;
	savedChanges_ = core_->commandChanges();
	if (std::string err = writePrivateFile(commandsFile_, core_->commandJournal().dump() + "\n"); !err.empty())
		log_->error("cannot write {}: {}", commandsFile_, err);
}

void Daemon::logRejection(const nlohmann::json &event)
{
	const std::string channel = event["channel"].get<std::string>();
	const std::string reason = event["reason"].get<std::string>();
	LogLimiter::Verdict v = rejectionLog_.admit(channel + "." + reason, now());
	if (v.suppressedBefore)
		log_->warn("{} more {} messages rejected ({}) in the last 10 s, not logged", v.suppressedBefore,
			   channel, reason);
	if (v.log)
		log_->warn("rejected {} message ({}): {}", channel, reason, event["detail"].get<std::string>());
}

// The schema checks what a message holds; this guard is for what it missed: no message may end the agent.
// A handler that throws leaves its outputs unsent, and the message counts as refused.
template <typename Handle>
std::optional<Rejection> Daemon::guarded(Handle &&handle)
{
	try {
		handle();
		return std::nullopt;
	} catch (const std::exception &e) {
		out_.clear();
		return Rejection{"handler_error", e.what()};
	}
}

void Daemon::handlePeer()
{
	for (int i = 0; i < kBatch; ++i) {
		std::optional<Incoming> in = transport_->receive(transport_->peerInbox());
		if (!in)
			return;
		double t = now();
		std::optional<Rejection> refused = in->rejection;
		if (!refused && transport_->curve())
			refused = checkSender(*in);
		if (!refused && transport_->curve())
			refused = checkKeyAllowed(*in);
		if (!refused) {
			learnEndpoints(*in);
			refused = guarded([&] { core_->onPeerMessage(in->message, t, out_); });
		}
		if (refused)
			core_->onRejected(Channel::Peer, *refused, t, out_);
		apply(out_);
	}
}

void Daemon::handleLocal()
{
	handleRequests(transport_->localInbox(), Channel::Local);
}

void Daemon::handleRemote()
{
	handleRequests(transport_->remoteInbox(), Channel::Remote);
}

void Daemon::handleRequests(zmq::socket_t &inbox, Channel channel)
{
	const bool local = channel == Channel::Local;
	for (int i = 0; i < kBatch; ++i) {
		std::optional<Incoming> in = transport_->receive(inbox);
		if (!in)
			return;
		double t = now();
		Message reply;
		std::optional<Rejection> refused = in->rejection;
		if (!refused && !local && transport_->curve())
			refused = checkKeyAllowed(*in);
		if (!refused)
			refused = guarded([&] {
				// A remote requester is its authenticated node (none in plain mode) and its connection.
				reply = local ? core_->onLocalRequest(in->message, t, out_)
					      : core_->onRemoteRequest(in->message, Requester{false, in->userId, in->routingId},
								       t, out_);
			});
		if (refused) {
			core_->onRejected(channel, *refused, t, out_);
			reply = makeMessage("error", config_.core.id, 0);
			reply["code"] = refused->reason;
			reply["text"] = refused->detail;
		}
		// A reply past the client's send queue (a client that does not read), or to one gone, is lost: counted.
		if (!local) {
			if (!transport_->sendRemote(in->routingId, reply))
				core_->count("replies.dropped.remote");
		} else {
			if (!transport_->sendLocal(in->routingId, reply))
				core_->count("replies.dropped.local");
			if (reply["type"] == "events_ok") {
				uint64_t lost = 0;
				for (const Message &m : recentEvents_)
					lost += !transport_->sendLocal(in->routingId, m);
				if (lost)
					core_->count("replies.dropped.local", lost);
				subscribers_.insert(in->routingId);
			}
		}
		apply(out_);
	}
}

void Daemon::budgetDescriptors(std::size_t listeners)
{
	budget_ = descriptorBudget(nofile_.after, listeners);
	transport_->setMaxOutgoingSockets(budget_.outgoingSockets);
	transport_->capConnections(budget_.perListener, budget_.perAddress);
}

// Said once everything listens: an agent that cannot start says only why.
void Daemon::logDescriptorBudget()
{
	const std::string raised = !nofile_.error.empty() ? fmt::format(" (not raised to the hard limit: {})", nofile_.error)
				   : nofile_.before != nofile_.after ? fmt::format(" (raised from {})", nofile_.before)
								     : std::string();
	log_->info("descriptors: limit {}{}; {} outgoing sockets to peers, {} kept for the local endpoint, at most {} "
		   "connections on each of {} listening TCP sockets, {} from one address",
		   nofile_.after, raised, budget_.outgoingSockets, budget_.local, budget_.perListener, budget_.listeners,
		   budget_.perAddress);
	if (budget_.perListener < kPerAddressMin)
		log_->warn("descriptor limit {} is too low for an agent: set LimitNOFILE (docs/deployment.md)",
			   nofile_.after);
}

void Daemon::watchDescriptors(double t)
{
	const ZmqTransport::ConnectionTally tally = transport_->watchConnections(t);
	if (tally.peerEnded)
		core_->count("inbox.peer.disconnects", tally.peerEnded);
	std::string metricsFrom;
	const uint64_t metricsClosed = metrics_ ? metrics_->takeClosedForCap(metricsFrom) : 0;
	for (const auto &[name, n] : {std::pair{"sockets.closed_for_cap.peer", tally.peerClosed},
				      std::pair{"sockets.closed_for_cap.remote", tally.remoteClosed},
				      std::pair{"sockets.closed_for_cap.metrics", metricsClosed}})
		if (n)
			core_->count(name, n);
	if (tally.peerClosed + tally.remoteClosed)
		cappedLastFrom_ = tally.lastClosedFrom;
	else if (metricsClosed)
		cappedLastFrom_ = metricsFrom;
	cappedUnlogged_ += tally.peerClosed + tally.remoteClosed + metricsClosed;
	if (const uint64_t shed = takeConnectionsShed()) {
		core_->count("sockets.shed_at_limit", shed);
		shedUnlogged_ += shed;
	}
	if (cappedUnlogged_ && descriptorLog_.admit("caps", t).log) {
		log_->warn("closed {} connections past their caps (at most {} on a listening socket, {} from one address), "
			   "the last from {}; counted as sockets.closed_for_cap.*",
			   cappedUnlogged_, budget_.perListener, budget_.perAddress, cappedLastFrom_);
		cappedUnlogged_ = 0;
	}
	if (shedUnlogged_ && descriptorLog_.admit("shed", t).log) {
		log_->warn("out of descriptors (limit {}): closed {} connections as they were accepted; counted as "
			   "sockets.shed_at_limit",
			   nofile_.after, shedUnlogged_);
		shedUnlogged_ = 0;
	}
}

} // namespace malleo
