// SPDX-License-Identifier: Apache-2.0
// A simulated node: its CPUs and external load, and an agent made of the real
// core and the real modules. Its profile is what the `static` profiling module
// reports for the node's power and external-load schedule, plus the CPU the
// simulated application's processes take (MPI processes spin in their
// barriers, so an active process uses its whole share).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <malleo/profiling_module.h>

#include "core.h"
#include "module_registry.h"
#include "scenario.h"
#include "stability.h"

namespace malleo::sim {

// What an agent is made of, shared by every node of a run.
struct AgentTemplate {
	CoreConfig core;
	std::string protocol;
	std::string decision;
	nlohmann::json protocolTable = nlohmann::json::object();
	nlohmann::json decisionTable = nlohmann::json::object();
	std::vector<std::string> modulePath;
	double tick = 0.1;
	double profileInterval = 1.0;
};

class SimNode
{
public:
	// Creates the agent's modules. Returns an empty string or one line saying
	// which module failed and why.
	std::string create(uint32_t index, const NodeClass &nodeClass, const AgentTemplate &agent,
			   std::vector<std::string> seeds, uint64_t seed);

	// Replay mode: the static module's table as given, its profile reported
	// unchanged (no simulated application adds to it).
	std::string createFromStatic(uint32_t index, const nlohmann::json &staticTable,
				     const AgentTemplate &agent);

	// Starts the agent at `now`.
	void start(double now, CoreOutputs &out);

	// The profile as the static module reports it, with `processes` active
	// processes of the application on this node.
	NodeProfile sample(double now, int64_t processes);

	// Sets the external load from `now` on.
	void setLoad(double now, double load);
	double externalLoad(double now) const;

	uint32_t index() const { return index_; }
	const std::string &id() const { return id_; }
	const std::string &endpoint() const { return endpoint_; }
	int cores() const { return cores_; }
	double speed() const { return speed_; }
	Core &core() { return *core_; }
	const Core &core() const { return *core_; }

	bool up = false;
	bool leaving = false; // draining before it goes down
	bool started = false;
	double startedAt = 0.0;
	double leftAt = -1.0;
	double nextSample = 0.0;
	// When the agent first had a reply to a work request, and after how many hops.
	double firstReplyAt = -1.0;
	int64_t firstReplyHops = -1;
	double firstWorkAt = -1.0; // when a process of the application first ran here
	bool joinedLate = false;   // joined after the initial nodes: measured for convergence

private:
	std::string reconfigureProfiling();
	std::string createAgent(const AgentTemplate &agent, std::vector<std::string> seeds,
				uint64_t seed, const nlohmann::json *staticTable);

	uint32_t index_ = 0;
	std::string id_;
	std::string endpoint_;
	int cores_ = 1;
	double speed_ = 1.0;
	std::vector<LoadStep> schedule_ = {{0.0, 0.0}}; // times from the node's start
	ModuleHandle profiling_;
	ModuleHandle protocol_;
	ModuleHandle decision_;
	std::unique_ptr<Core> core_;
	StabilityWindow apwWindow_; // σ_i as the host profiling module computes it, over its default window
	bool overlay_ = true;	       // add the application's processes to the profile
};

// "n00042": ids sort as the nodes were created.
std::string nodeId(uint32_t index);
std::string nodeEndpoint(uint32_t index);

} // namespace malleo::sim
