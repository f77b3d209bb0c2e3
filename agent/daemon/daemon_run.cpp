// SPDX-License-Identifier: Apache-2.0
// Daemon::run: set-up (descriptors, run directory, signals, sockets, the core), the loop (poll, handle, tick) and
// tear-down (leave, close). The handlers and the rest of the adapter are in daemon.cpp.
#include "daemon.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accept_guard.h"
#include "metrics.h"

namespace malleo {

namespace {

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

int Daemon::run()
{
	if (!setUp()) {
		if (sigfd_ >= 0)
			close(sigfd_);
		return 1;
	}
	loop();
	tearDown();
	return 0;
}

// Everything before the first poll; false (the reason logged) when the agent cannot start.
bool Daemon::setUp()
{
	log_->set_level(levelOf(config_.logLevel));
	// Before any socket: the most descriptors the agent may have, and the spare the accept guard gives up at the
	// limit (accept_guard.h).
	nofile_ = raiseNofileLimit();
	armAcceptGuard();

	if (std::string err = prepareRunDir(); !err.empty()) {
		log_->error("{}", err);
		return false;
	}

	// Signals arrive as a readable descriptor, polled with the sockets.
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, nullptr);
	sigfd_ = signalfd(-1, &mask, SFD_CLOEXEC);

	transport_ = std::make_unique<ZmqTransport>(config_.core.id, config_.maxMessageBytes,
						    config_.debugJson);
	localEndpoint_ = "ipc://" + socketPath_;
	const std::string appListen = appListenEndpoint(config_);
	if (std::string err = setUpSecurity(!appListen.empty()); !err.empty()) {
		log_->error("{}", err);
		return false;
	}
	const bool metricsOn = !config_.metricsListen.empty() && config_.metricsListen != "off";
	budgetDescriptors(1 + !appListen.empty() + metricsOn);
	if (!bindEndpoints(appListen))
		return false;
	if (metricsOn) {
		metrics_ = std::make_unique<MetricsHttp>();
		if (std::string err = metrics_->start(config_.metricsListen, budget_.perListener, budget_.perAddress);
		    !err.empty()) {
			log_->error("{}", err);
			return false;
		}
	}
	startCore();
	return true;
}

// Each endpoint bound alone, so that a failure names the one taken and how to pick another (a port in use is the
// usual one: another malleod on this host).
bool Daemon::bindEndpoints(const std::string &appListen)
{
	const char *binding = "agent.listen";
	std::string endpoint = config_.listen;
	try {
		std::string bound = transport_->bindPeer(config_.listen);
		config_.core.endpoint = advertised(bound, config_.advertise);
		binding = "agent.run_dir";
		endpoint = localEndpoint_;
		transport_->bindLocal(localEndpoint_);
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
		return false;
	}
	return true;
}

// The core made and started, the journal of its predecessor read back, the agent file written.
void Daemon::startCore()
{
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
	writeAgentFile(localEndpoint_);
	log_->info("agent {} listening on {} (local {}, remote coordinators {}, metrics {})", config_.core.id,
		   config_.core.endpoint, localEndpoint_,
		   config_.core.appEndpoint.empty() ? "none" : config_.core.appEndpoint,
		   metrics_ ? metrics_->url() : "off");
	logDescriptorBudget();
	nextTick_ = t + config_.tick;
	nextSample_ = t + config_.profileInterval;
}

// Until a signal (or a finished drain) says leave.
void Daemon::loop()
{
	bool stop = false;
	while (!stop) {
		// The ZAP handler's socket first: a handshake waits for its answer.
		std::vector<zmq::pollitem_t> items = {
			{transport_->peerInbox().handle(), 0, ZMQ_POLLIN, 0},
			{transport_->localInbox().handle(), 0, ZMQ_POLLIN, 0},
			{transport_->remoteInbox().handle(), 0, ZMQ_POLLIN, 0},
			{nullptr, sigfd_, ZMQ_POLLIN, 0},
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
		double wakeAt = std::min(nextTick_, nextSample_);
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
		if (items[3].revents & ZMQ_POLLIN)
			stop = onSignal();
		if (metrics_)
			metrics_->serve(&items[metricsAt], now(), [this] { return prometheusText(*core_, now()); });
		runTimers();
		if (core_->drainDone()) {
			log_->info("drained: leaving");
			stop = true;
		}
	}
}

// The first signal drains a node that runs processes; a second one, or a node with none, leaves now (true).
bool Daemon::onSignal()
{
	signalfd_siginfo info;
	const int signo = read(sigfd_, &info, sizeof(info)) > 0 ? static_cast<int>(info.ssi_signo) : 0;
	if (!core_->draining() && config_.core.drainDeadline > 0 && core_->hostsActiveProcesses()) {
		log_->info("signal {}: draining (at most {} s; a second signal leaves at once)", signo,
			   config_.core.drainDeadline);
		core_->drain(now(), config_.core.drainDeadline, out_);
		apply(out_);
		return false;
	}
	log_->info("signal {}: leaving", signo);
	return true;
}

// The profile's sample and the core's tick, each when due; a late one is not caught up.
void Daemon::runTimers()
{
	const double t = now();
	if (t >= nextSample_) {
		forgetEndedProcesses(t);
		core_->setLocalProfile(profiling_.sample(t));
		nextSample_ += config_.profileInterval;
		if (nextSample_ < t)
			nextSample_ = t + config_.profileInterval;
	}
	if (t >= nextTick_) {
		core_->tick(t, out_);
		apply(out_);
		eventFiles_.flush(t - startedAt_);
		nextTick_ += config_.tick;
		if (nextTick_ < t)
			nextTick_ = t + config_.tick;
	}
}

// A graceful leave: the peers told, the run files removed, the sockets closed.
void Daemon::tearDown()
{
	core_->leave(now(), out_);
	apply(out_);
	removeRunFiles();
	if (metrics_)
		metrics_->stop();
	transport_->close(500);
	eventFiles_.close();
	close(sigfd_);
	sigfd_ = -1;
}

} // namespace malleo
