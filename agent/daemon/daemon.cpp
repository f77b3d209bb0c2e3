// SPDX-License-Identifier: Apache-2.0
#include "daemon.h"

#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
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

std::string advertised(const std::string &bound, const std::string &advertise)
{
	if (!advertise.empty())
		return advertise;
	// tcp://0.0.0.0:PORT is no address a peer can reach: use the host name.
	const std::string any = "tcp://0.0.0.0:";
	if (bound.rfind(any, 0) == 0) {
		char host[256] = {};
		gethostname(host, sizeof(host) - 1);
		return fmt::format("tcp://{}:{}", host, bound.substr(any.size()));
	}
	return bound;
}

// The remote application endpoint as coordinators on other nodes are told it: on a wildcard address, the host the
// peers are told (config `advertise` or the host name), so both endpoints name the agent the same way.
std::string advertisedApp(const std::string &bound, const std::string &peerEndpoint)
{
	const std::string any = "tcp://0.0.0.0:";
	const std::size_t colon = peerEndpoint.rfind(':');
	if (bound.rfind(any, 0) != 0 || !peerEndpoint.starts_with("tcp://") || colon == std::string::npos)
		return bound;
	return peerEndpoint.substr(0, colon + 1) + bound.substr(any.size());
}

spdlog::level::level_enum levelOf(const std::string &name)
{
	return spdlog::level::from_str(name);
}

// One line for an endpoint the agent cannot bind: which one, why, and the flag or key that picks another.
std::string bindFailure(const std::string &key, const std::string &endpoint, const zmq::error_t &e)
{
	if (key == "agent.run_dir")
		return fmt::format("cannot listen on '{}' (the local endpoint, in agent.run_dir): {}; give another run "
				   "directory with --run-dir or agent.run_dir",
				   endpoint, e.what());
	std::string line = fmt::format("cannot listen on '{}' ({}): {}", endpoint, key, e.what());
	if (e.num() == EADDRINUSE)
		line += " (another malleod on this host?)";
	return line + fmt::format("; pick another with {} tcp://HOST:PORT or {} (port 0: any free one)",
				  key == "agent.listen" ? "--listen" : "--app-listen", key);
}

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

int Daemon::run()
{
	log_->set_level(levelOf(config_.logLevel));
	// Before any socket: the most descriptors the agent may have, and the spare the accept guard gives up at the
	// limit (accept_guard.h).
	nofile_ = raiseNofileLimit();
	armAcceptGuard();

	if (std::string err = prepareRunDir(); !err.empty()) {
		log_->error("{}", err);
		return 1;
	}

	// Signals arrive as a readable descriptor, polled with the sockets.
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, nullptr);
	int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);

	transport_ = std::make_unique<ZmqTransport>(config_.core.id, config_.maxMessageBytes,
						    config_.debugJson);
	std::string localEndpoint = "ipc://" + socketPath_;
	const std::string appListen = appListenEndpoint(config_);
	if (std::string err = setUpSecurity(!appListen.empty()); !err.empty()) {
		log_->error("{}", err);
		close(sigfd);
		return 1;
	}
	const bool metricsOn = !config_.metricsListen.empty() && config_.metricsListen != "off";
	budgetDescriptors(1 + !appListen.empty() + metricsOn);
	// Each endpoint bound alone, so that a failure names the one taken and how to pick another (a port in use
	// is the usual one: another malleod on this host).
	const char *binding = "agent.listen";
	std::string endpoint = config_.listen;
	try {
		std::string bound = transport_->bindPeer(config_.listen);
		config_.core.endpoint = advertised(bound, config_.advertise);
		binding = "agent.run_dir";
		endpoint = localEndpoint;
		transport_->bindLocal(localEndpoint);
		// ZeroMQ makes the socket with the umask's mode (0755 under the usual 022); the directory is 0700 already,
		// the socket is made the user's alone as well, as docs/deployment.md says.
		if (chmod(socketPath_.c_str(), 0600) != 0)
			log_->warn("cannot make '{}' 0600: {}", socketPath_, std::strerror(errno));
		if (!appListen.empty()) {
			binding = "agent.app_listen";
			endpoint = appListen;
			config_.core.appEndpoint = advertisedApp(transport_->bindRemote(appListen), config_.core.endpoint);
		}
	} catch (const zmq::error_t &e) {
		log_->error("{}", bindFailure(binding, endpoint, e));
		close(sigfd);
		return 1;
	}
	if (metricsOn) {
		metrics_ = std::make_unique<MetricsHttp>();
		if (std::string err = metrics_->start(config_.metricsListen, budget_.perListener, budget_.perAddress);
		    !err.empty()) {
			log_->error("{}", err);
			close(sigfd);
			return 1;
		}
	}

	if (std::string err = eventFiles_.open(config_.runDir, config_.core.id); !err.empty())
		log_->warn("cannot write the event log: {}; its events go to subscribers only", err);
	core_ = std::make_unique<Core>(config_.core, protocol_, decision_);
	core_->setNodeDescription(profiling_.describe());
	core_->setModuleNames(moduleNames_);
	double t = now();
	core_->setLocalProfile(profiling_.sample(t));
	startedAt_ = t;
	core_->start(t, out_);
	recoverCommands(t);
	apply(out_);
	writeAgentFile(localEndpoint);
	log_->info("agent {} listening on {} (local {}, remote coordinators {}, metrics {})", config_.core.id,
		   config_.core.endpoint, localEndpoint,
		   config_.core.appEndpoint.empty() ? "none" : config_.core.appEndpoint,
		   metrics_ ? metrics_->url() : "off");
	logDescriptorBudget();

	double nextTick = t + config_.tick;
	double nextSample = t + config_.profileInterval;
	bool stop = false;
	while (!stop) {
		// The ZAP handler's socket first: a handshake waits for its answer.
		std::vector<zmq::pollitem_t> items = {
			{transport_->peerInbox().handle(), 0, ZMQ_POLLIN, 0},
			{transport_->localInbox().handle(), 0, ZMQ_POLLIN, 0},
			{transport_->remoteInbox().handle(), 0, ZMQ_POLLIN, 0},
			{nullptr, sigfd, ZMQ_POLLIN, 0},
		};
		const auto add = [&items](zmq::socket_t &s) {
			items.push_back({s.handle(), s ? 0 : -1, static_cast<short>(s ? ZMQ_POLLIN : 0), 0});
			return items.size() - 1;
		};
		const std::size_t zapAt = transport_->curve() ? add(transport_->zapSocket()) : 0;
		// The inboxes' monitors: a connection accepted is held to the caps at once.
		add(transport_->peerMonitor());
		add(transport_->remoteMonitor());
		const std::size_t metricsAt = items.size();
		double wakeAt = std::min(nextTick, nextSample);
		if (metrics_) {
			metrics_->addPollItems(items);
			wakeAt = std::min(wakeAt, metrics_->nextDeadline().value_or(wakeAt));
		}
		double wait = std::max(0.0, wakeAt - now());
		zmq::poll(items, std::chrono::milliseconds(static_cast<long>(wait * 1000) + 1));
		if (transport_->curve() && (items[zapAt].revents & ZMQ_POLLIN))
			handleZap();
		watchDescriptors(now());
		if (items[0].revents & ZMQ_POLLIN)
			handlePeer();
		if (items[1].revents & ZMQ_POLLIN)
			handleLocal();
		if (items[2].revents & ZMQ_POLLIN)
			handleRemote();
		if (items[3].revents & ZMQ_POLLIN) {
			signalfd_siginfo info;
			const int signo = read(sigfd, &info, sizeof(info)) > 0 ? static_cast<int>(info.ssi_signo) : 0;
			// The first signal drains a node that runs processes; a second one, or a node with none, leaves now.
			if (!core_->draining() && config_.core.drainDeadline > 0 && core_->hostsActiveProcesses()) {
				log_->info("signal {}: draining (at most {} s; a second signal leaves at once)", signo,
					   config_.core.drainDeadline);
				core_->drain(now(), config_.core.drainDeadline, out_);
				apply(out_);
			} else {
				log_->info("signal {}: leaving", signo);
				stop = true;
			}
		}
		if (metrics_)
			metrics_->serve(&items[metricsAt], now(), [this] { return prometheusText(*core_, now()); });
		t = now();
		if (t >= nextSample) {
			forgetEndedProcesses(t);
			core_->setLocalProfile(profiling_.sample(t));
			nextSample += config_.profileInterval;
			if (nextSample < t)
				nextSample = t + config_.profileInterval;
		}
		if (t >= nextTick) {
			core_->tick(t, out_);
			apply(out_);
			eventFiles_.flush(t - startedAt_);
			nextTick += config_.tick;
			if (nextTick < t)
				nextTick = t + config_.tick;
		}
		if (core_->drainDone()) {
			log_->info("drained: leaving");
			stop = true;
		}
	}

	core_->leave(now(), out_);
	apply(out_);
	removeRunFiles();
	if (metrics_)
		metrics_->stop();
	transport_->close(500);
	eventFiles_.close();
	close(sigfd);
	return 0;
}

} // namespace malleo
