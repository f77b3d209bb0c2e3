// SPDX-License-Identifier: Apache-2.0
// The simulated iterative MPI application: data units spread over processes,
// compute per unit scaled by the node's speed and the process's share of its
// CPU, a communication pattern, a barrier per iteration. It registers its
// processes with the agents and reports to them through the real local
// messages, and it carries out the actions the decision modules ask for at its
// next iteration boundary (its resize point), paying for the data it moves and
// the processes it starts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <malleo/command.h>
#include <malleo/message.h>

#include "scenario.h"
#include "sim_node.h"

namespace malleo::pcm {
struct Membership;
struct Plan;
} // namespace malleo::pcm

namespace malleo::sim {

// Which reconfigurations the application carries out: the policy under test
// and the baselines differ only here and in the decision module they run.
enum class Execution {
	Full,	   // every command the bridge can carry out
	Migration, // whole processes move: the bridge refuses split and merge
	Static,	   // the agents decide nothing; processes move only off a node that left
	Central,   // a global scheduler resizes at every iteration boundary; no bridge
	Swap,	   // the swap module's migrations of one process to a parked spare
};

struct SimProcess {
	uint32_t rank = 0;
	uint32_t node = 0;
	double data = 1.0; // data units held
	bool active = true;
};

// The nodes as the application sees them.
struct NodeAccess {
	std::function<SimNode *(uint32_t index)> node;		    // null when gone
	std::function<int64_t(const std::string &id)> indexOf;	    // -1 when unknown
	std::function<Message(uint32_t node, const Message &request)> local; // a local request
	std::function<std::vector<uint32_t>()> upNodes;		    // sorted
	std::function<void(double seconds, std::function<void()>)> after; // runs later on the simulated clock
};

// A reconfiguration as the application carried it out (or a node's drain, which the run adds): what the plot
// marks and what the agents' event log must agree with.
struct ReconfigurationMark {
	double at = 0.0;      // simulated seconds: the iteration boundary it was carried out at, or the drain's start
	int64_t iteration = 0; // the probe it was carried out at (the `iteration` of the bridge's result), or in progress
	std::string kind;     // split, merge, migrate (the bridge's), evacuate, resize (central), drain
	int64_t count = 0;    // processes it concerned (drain: those active on the node)
	std::string from;     // node ids, when the command named them
	std::string to;
};

struct IterationTiming {
	double seconds = 0.0;	// the slowest process, plus the barrier
	double imbalance = 0.0; // (max − mean) / max of the processes' times
	std::vector<double> perProcess;
};

class SimApplication
{
public:
	SimApplication(ApplicationModel model, NetworkModel network, Execution execution,
		       NodeAccess nodes);

	// Places the processes on `nodes` in contiguous blocks and registers them.
	void launch(double now, const std::vector<uint32_t> &nodes);

	IterationTiming evaluate(const std::vector<SimProcess> &processes, double now) const;
	IterationTiming evaluate(double now) const { return evaluate(processes_, now); }

	// At an iteration boundary (the `iteration`-th probe): moves processes off nodes that left, polls the root
	// agent for a command and carries it out as the PCM bridge would (sim_bridge.cpp), or runs the central
	// scheduler, and returns the seconds the reconfiguration costs.
	double reconfigure(double now, int64_t iteration, int64_t remainingIterations);

	// Reports the iteration to the agents, as the PMPI profiler would.
	void report(double now, double iterationSeconds, const IterationTiming &timing);

	// A node joined while the application runs: it gets its pool of parked processes.
	void nodeJoined(uint32_t node, double now);

	const std::vector<SimProcess> &processes() const { return processes_; }
	int64_t activeProcesses() const;
	int64_t activeOn(uint32_t node) const;
	const std::map<std::string, int64_t> &reconfigurations() const { return done_; }
	const std::map<std::string, int64_t> &refused() const { return refused_; }
	const std::vector<ReconfigurationMark> &marks() const { return marks_; }
	int64_t reconfigurationCount() const;
	const ApplicationModel &model() const { return model_; }

private:
	// The PCM bridge's part (sim_bridge.cpp).
	double bridge(double now, int64_t iteration);
	bool pollCommand(uint32_t root, int64_t iteration, Command &command, uint64_t &id);
	pcm::Membership membership(std::vector<double> &shares) const;
	double moveCost(const pcm::Plan &plan, const pcm::Membership &m, const std::vector<double> &shares,
			const std::vector<double> &after, double &moved) const;
	void applyPlan(const pcm::Plan &plan, const std::vector<double> &after);
	void fillPool(uint32_t node);
	int64_t rootNode() const; // the node of world rank 0, whose agent the bridge polls; -1: none up
	double evacuate(double now);
	double central(double now, int64_t remaining);
	double interNodeSeconds(double units) const;
	int64_t findRank(uint32_t rank) const;
	uint32_t newRank() { return nextRank_++; }
	double cpuShare(uint32_t node, int64_t active, double now) const;
	void syncRegistry(double now);
	void refuse(const std::string &kind) { refused_[kind]++; }

	ApplicationModel model_;
	NetworkModel network_;
	Execution execution_;
	NodeAccess nodes_;
	std::vector<SimProcess> processes_; // in decomposition order
	std::vector<int64_t> weights_; // the bridge's data shares per slot; empty: even
	uint64_t nextMessageId_ = 1;
	std::map<uint32_t, uint32_t> registered_; // rank → node whose agent knows it
	std::map<std::string, int64_t> done_;
	std::map<std::string, int64_t> refused_;
	std::vector<ReconfigurationMark> marks_;
	std::vector<uint32_t> joined_; // nodes that need their pool
	uint32_t nextRank_ = 0;
	int64_t probe_ = 0; // the boundary reconfigure() is at
	int64_t reports_ = 0;
	bool launched_ = false;
};

} // namespace malleo::sim
