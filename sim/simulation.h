// SPDX-License-Identifier: Apache-2.0
// One run of a scenario under one policy: the nodes and their agents, the
// network, the application, driven by the event queue until the application
// finishes or the scenario's duration is over.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "event_queue.h"
#include "scenario.h"
#include "sim_application.h"
#include "sim_node.h"
#include "sim_transport.h"

namespace malleo::sim {

struct RunOptions {
	std::string policy = "malleo"; // the label of the run in the outputs
	std::string decision;	       // decision module of the agents
	std::string protocol;	       // empty: the scenario's, else "p2p"
	Execution execution = Execution::Full;
	uint64_t seed = 1;
	int64_t nodes = 0; // 0: the scenario's
	std::vector<std::string> modulePath;
};

struct IterationRecord {
	int64_t iteration = 0;
	double start = 0.0;
	double seconds = 0.0;	    // including the reconfiguration before it
	double reconfiguration = 0.0; // of which spent reconfiguring
	double imbalance = 0.0;
	int64_t processes = 0;	    // active
	int64_t nodesUp = 0;
	int64_t nodesUsed = 0;	    // nodes with an active process
	int64_t maxPerNode = 0;
	int64_t reconfigurations = 0; // carried out at this iteration's start
	uint64_t messages = 0;	    // agent messages sent during the iteration
	std::string placement;	    // active processes per node, for up to 64 nodes
};

struct RunResult {
	std::string policy;
	std::string decision;
	std::string protocol;
	std::vector<IterationRecord> iterations;
	double appStart = -1.0;
	double appEnd = -1.0; // -1: did not finish within the duration
	double simulated = 0.0; // seconds simulated
	std::map<std::string, int64_t> reconfigurations;
	std::map<std::string, int64_t> refused;
	std::vector<ReconfigurationMark> marks; // in time order
	TransportStats transport;
	double agentSeconds = 0.0; // sum over agents of the time they were up
	int64_t nodesCreated = 0;
	int64_t lateJoins = 0;
	std::vector<double> joinToReply; // seconds from a late join to its first WRM reply
	std::vector<int64_t> replyHops;
	std::vector<double> joinToWork; // seconds from a late join to its first active process
	std::map<std::string, uint64_t> counters; // summed over agents: tx.*, actions.*, wrm.*
	uint64_t events = 0;			  // events the queue ran

	double meanIteration() const;
	double messagesPerAgentSecond() const;
};

class Simulation
{
public:
	// Observers for the replay mode and tests.
	std::function<void(uint32_t from, const std::string &to, const Message &)> onSend;
	std::function<void(uint32_t node, const nlohmann::json &event)> onEvent;
	// Called at the start and every 4096 events with the simulated time and the scenario's duration, for a
	// progress line; it must not change the run.
	std::function<void(double now, double until)> onProgress;

	// Checks the options and builds the agents' template. Returns an empty
	// string or one line saying what is wrong.
	std::string setup(const Scenario &scenario, const RunOptions &options);
	RunResult run();

	// For the replay mode: one node driven by hand.
	EventQueue &clock() { return clock_; }
	SimNode &addNode(double at, bool late, const std::string &nodeClass);
	// Replay mode: the agent of the configuration, with its static profile, started at 0.
	SimNode &addReplayNode(const nlohmann::json &staticTable);
	void deliverLocal(uint32_t node, const Message &request, std::function<void(const Message &)> reply);
	void deliverPeer(uint32_t node, const Message &message);
	const std::vector<std::unique_ptr<SimNode>> &nodes() const { return nodes_; }
	const std::string &error() const { return error_; } // a node that could not be made

private:
	const NodeClass &classFor(uint32_t index, const std::string &name) const;
	void tick(uint32_t index);
	void dispatch(uint32_t from, CoreOutputs &out);
	int64_t indexOfEndpoint(const std::string &endpoint) const;
	void fire(const ScenarioEvent &event);
	void join(int64_t count, const std::string &nodeClass);
	void leave(int64_t count, const std::string &which);
	void goDown(uint32_t index);
	void load(int64_t count, const std::string &which, double value);
	std::vector<uint32_t> choose(int64_t count, const std::string &which);
	std::vector<uint32_t> upNodes() const;
	void launchApplication();
	void refreshActive();
	void iterationDone(double startedAt, double reconfiguration, IterationTiming timing,
			   int64_t reconfigurations);
	void startIteration();

	Scenario scenario_;
	RunOptions options_;
	AgentTemplate agent_;
	EventQueue clock_;
	std::unique_ptr<SimTransport> transport_;
	std::mt19937_64 rng_;
	std::vector<std::unique_ptr<SimNode>> nodes_;
	std::unique_ptr<SimApplication> app_;
	std::vector<int64_t> activeCount_; // per node, after the last reconfiguration
	RunResult result_;
	int64_t iteration_ = 0;
	uint64_t messagesAtStart_ = 0;
	bool finished_ = false;
	std::string error_;
};

const char *executionName(Execution e);

} // namespace malleo::sim
