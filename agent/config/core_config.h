// SPDX-License-Identifier: Apache-2.0
// The parameters of the core; docs/configuration.md documents each with its default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace malleo {

struct CoreConfig {
	std::string id;
	std::string endpoint;		// the address peers reach this agent's inbox at
	std::string appEndpoint;	// where coordinators on other nodes poll (tcp://; empty: nowhere)
	std::vector<std::string> seeds; // seed peers' endpoints
	uint64_t seed = 0;		// random generator seed (0: derived from the id)
	std::string agentVersion = "0.1.0";

	// membership
	double heartbeatInterval = 0.5;
	double failureTimeout = 2.0;
	double gossipInterval = 1.0;
	double joinRetry = 1.0;
	unsigned maxCandidates = 256;
	unsigned maxPeers = 256; // peers kept at once; a newcomer past it evicts one outside the view
	bool peerIpc = false;	 // take ipc:// endpoints from peers (agents of one host); a seed's is always taken

	// decisions
	double decisionInterval = 1.0; // seconds between calls of the decision module's onTick
	unsigned maxApplications = 64;
	unsigned maxProcessesPerApp = 4096;

	// actions: what the decision module asks is carried out (docs/configuration.md, "actions")
	bool act = true;	     // false: actions are events only (observation)
	double holdDown = 10.0;	     // seconds after an application's reconfiguration before a decision asks another
	double requestTimeout = 90.0; // a reconfiguration request with no result by then is given up
	double drainDeadline = 60.0; // a draining agent exits by then, with or without processes left
	// The root agent adds each node's power (PW) as `node_weights` to the commands it queues, so the bridge
	// shares the data in proportion to the nodes' power rather than evenly over the processes (issue 27).
	bool nodeWeights = false;

	// work stealing
	bool wrmEnabled = true;
	bool wrmOnJoin = true;
	double idleThreshold = 0.5; // send a WRM while the available CPU share is at least this
	unsigned ttl = 0;	    // 0: ceil(log2 N) + 2
	double wrmTimeout = 1.0;
	double backoffInitial = 1.0;
	double backoffMax = 30.0;
	double wrmCooldown = 5.0;
};

} // namespace malleo
