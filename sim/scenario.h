// SPDX-License-Identifier: Apache-2.0
// A scenario: the nodes, the network, the agents' configuration, the
// application and what changes over time. sim/README.md documents the format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace malleo::sim {

// External load (a share of the node's CPU, 0..1) from `at` seconds after the node started.
struct LoadStep {
	double at = 0.0;
	double load = 0.0;
};

struct NodeClass {
	std::string name = "default";
	double weight = 1.0; // share of the nodes of this class
	int cores = 1;
	double speed = 1.0;		 // per core, relative units
	double load = 0.0;		 // external load at start
	std::vector<LoadStep> trace;	 // later changes
};

struct NetworkModel {
	double latency = 1e-4;	    // seconds, one way
	double jitter = 0.0;	    // seconds, uniform extra on top of latency
	double bandwidth = 1.25e8;  // bytes per second of a link
	double loss = 0.0;	    // probability a message is lost, 0..1
	double intraSecondsPerByte = 1e-10; // between processes on one node
};

struct ApplicationModel {
	std::string name = "app";
	std::string pattern = "neighbour"; // "neighbour" (heat2d) or "farmer" (astro)
	int64_t processes = 0;		   // at launch; 0: processesPerCore per core of the initial nodes
	double processesPerCore = 1.0;
	int64_t units = 0;		   // data units; 0: as many as processes
	double workPerUnit = 1.0;	   // seconds per iteration of one unit on a core of speed 1
	double bytesPerUnit = 1e6;	   // data moved when a unit changes process
	double boundaryBytes = 1e5;	   // neighbour: bytes to each neighbour per iteration
	double resultBytesPerUnit = 1e4;   // farmer: bytes per unit sent back to rank 0
	int64_t iterations = 60;
	double start = 3.0;		   // seconds after the simulation starts
	double spawnLatency = 0.5;	   // seconds to start processes on a node
	double poolPerCore = 2.0;	   // processes per core the pool-mode launch puts on each node (active or parked)
	double activationLatency = 0.05;   // seconds to wake a parked process (swap)
	int64_t overAllocation = 0;	   // swap baseline: parked processes per node; 0: one
	double reportPeriod = 1.0;	   // iterations between reports to the agent (1: every)
	bool reportsRemaining = true;	   // says its iterations at launch, as PCM_Remaining_iterations(iterations)
};

// Something that happens at a time or when the application reaches an iteration.
struct ScenarioEvent {
	std::optional<double> at;
	std::optional<int64_t> iteration;
	std::string kind;	      // "join", "leave", "load"
	int64_t count = 0;	      // nodes joining, leaving or changing load
	std::string which = "random"; // leave/load: "first", "last", "random"
	std::string nodeClass;	      // join: class of the new nodes (empty: the first class)
	double load = 0.0;	      // load: the new external load
	int64_t repeat = 1;	      // times the event happens
	double every = 0.0;	      // seconds between repetitions
};

struct Scenario {
	std::string name;
	std::string description;
	int64_t nodes = 8;		  // at start (--nodes replaces it)
	double duration = 600.0;	  // simulated seconds at most
	double startup = 1.0;		  // initial agents start spread over this many seconds
	int seedPeers = 2;		  // seeds each agent gets, among agents started before it
	std::vector<NodeClass> classes;	  // at least one
	NetworkModel network;
	nlohmann::json agent = nlohmann::json::object(); // an agent configuration document
	std::optional<ApplicationModel> application;
	std::vector<ScenarioEvent> events;
	std::vector<std::string> baselines; // run besides the chosen decision module
};

// Reads a scenario strictly. Returns an empty string or one line naming the key.
std::string parseScenario(const nlohmann::json &doc, Scenario &scenario);
std::string loadScenarioFile(const std::string &path, Scenario &scenario);

} // namespace malleo::sim
