// SPDX-License-Identifier: Apache-2.0
// The daemon: the event loop that joins the core to its adapters (sockets,
// clock, signals, the profiling module) and carries out what the core decides.
#pragma once

#include <deque>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include <spdlog/logger.h>

#include <malleo/profiling_module.h>

#include "config.h"
#include "descriptor_budget.h"
#include "core.h"
#include "event_files.h"
#include "key_ring.h"
#include "log_limiter.h"
#include "metrics_http.h"
#include "seed_watch.h"
#include "zmq_transport.h"

namespace malleo {

class Daemon
{
public:
	Daemon(AgentConfig config, ProfilingModule &profiling, ProtocolModule &protocol,
	       DecisionModule &decision, nlohmann::json moduleNames);

	// Binds, runs until SIGTERM or SIGINT, leaves gracefully. Returns the exit status.
	int run();

private:
	// daemon_run.cpp: run() is set-up, loop and tear-down.
	bool setUp();
	bool bindEndpoints(const std::string &appListen);
	void startCore();
	void loop();
	bool onSignal();
	void runTimers();
	void tearDown();

	std::string prepareRunDir();
	void writeAgentFile(const std::string &localEndpoint);
	// The command journal (commands.json): read back at start, written when it changes.
	void recoverCommands(double t);
	void saveCommands();
	void removeRunFiles();
	void forgetEndedProcesses(double t);
	void apply(CoreOutputs &out);
	void handlePeer();
	void handleLocal();
	void handleRemote();
	void handleRequests(zmq::socket_t &inbox, Channel channel);
	void logRejection(const nlohmann::json &event);
	// Sets the descriptor budget up (descriptor_budget.h); before anything listens.
	void budgetDescriptors(std::size_t listeners);
	void logDescriptorBudget();
	// Counts and says (a line per 10 s at most) the connections closed for a cap or for lack of a descriptor.
	void watchDescriptors(double t);
	template <typename Handle>
	std::optional<Rejection> guarded(Handle &&handle);
	double now() const;

	// Authentication (daemon_security.cpp, docs/deployment.md).
	// Reads this node's key and the allowed keys and makes the transport's TCP sockets CURVE ones; or says why the
	// agent cannot start. With security.plain, warns.
	std::string setUpSecurity(bool remote);
	// Answers the ZAP requests of CURVE handshakes: a key in security.allowed_keys gets its node as User-Id.
	void handleZap();
	// With CURVE, a peer message must come from the node it says it is from; the refusal, or nothing.
	std::optional<Rejection> checkSender(const Incoming &in);
	// With CURVE, the key a connection was made with must still be allowed: ZeroMQ checks it only at the handshake,
	// so a node whose .pub was removed is refused here on the connections it opened before.
	std::optional<Rejection> checkKeyAllowed(const Incoming &in);
	// Reads security.allowed_keys again if the directory changed; a bad file is logged, the keys before kept.
	void refreshKeys();
	// Which node listens at which endpoint, as authenticated peers said: the public key a connection there needs.
	void learnEndpoints(const Incoming &in);
	std::string serverKeyFor(const std::string &endpoint);

	AgentConfig config_;
	ProfilingModule &profiling_;
	ProtocolModule &protocol_;
	DecisionModule &decision_;
	nlohmann::json moduleNames_;
	std::shared_ptr<spdlog::logger> log_;
	std::unique_ptr<ZmqTransport> transport_;
	std::unique_ptr<Core> core_;
	std::unique_ptr<MetricsHttp> metrics_; // agent.metrics_listen: GET /metrics
	std::set<std::string> subscribers_;
	std::set<std::tuple<std::string, uint32_t, int64_t>> pidsSeenAlive_; // (app, rank, pid) alive at the last look
	std::deque<Message> recentEvents_; // replayed to a new subscriber
	CoreOutputs out_;
	LogLimiter rejectionLog_{5, 10.0}; // lines per channel and reason, per 10 s
	SeedWatch seedWatch_;
	KeyRing keyRing_;
	LogLimiter authLog_{1, 60.0}; // refused handshakes: a line per client address, per minute
	NofileLimit nofile_;
	DescriptorBudget budget_;
	LogLimiter descriptorLog_{1, 10.0}; // connections closed for caps, or at the limit: a line per 10 s
	uint64_t cappedUnlogged_ = 0;	    // closed for a cap since the last line
	std::string cappedLastFrom_;
	uint64_t shedUnlogged_ = 0; // closed at accept for lack of a descriptor since the last line
	std::map<std::string, std::string> nodeSaidAt_;	  // endpoint -> node, from the node itself
	std::map<std::string, std::string> nodeClaimedAt_; // endpoint -> node, from other nodes (gossip, wrm)
	std::string socketPath_;
	std::string agentFile_;
	std::string commandsFile_;
	uint64_t savedChanges_ = UINT64_MAX; // the core's commandChanges() when the journal was last written
	EventFiles eventFiles_; // <run_dir>/events.jsonl and decisions.jsonl
	double startedAt_ = 0.0; // the core's start, on now()'s clock: the events' t is counted from it
	int sigfd_ = -1;	  // SIGTERM and SIGINT, read in the loop
	std::string localEndpoint_;
	double nextTick_ = 0.0;
	double nextSample_ = 0.0;
};

} // namespace malleo
