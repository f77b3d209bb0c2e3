// SPDX-License-Identifier: Apache-2.0
// ios's prediction when the bridge shares the data evenly over the application's processes (no
// actions.node_weights, ios.split_shares "even"). Seed 001's model (transfer_policy.h) divides a node's units by
// its power as a whole; with even pieces the iteration waits for the slowest process, whose time is its piece over
// the speed of the core share it gets, so this model counts per process: a process on a fast node is faster than
// one on a slow node whatever the nodes' free power, and a split leaves the splitting node's processes where they
// are, each piece shrinking by P / (P + r).
#pragma once

#include <cstdint>
#include <vector>

namespace malleo::ios {

struct EvenNode {
	double coreSpeed = 1.0;	 // PW / cores
	int64_t cores = 1;
	double freeCores = 0.0;	 // the requester: APW x cores
};

struct EvenProcess {
	int64_t units = 1;
	double cores = 0.0; // the share of a core it gets now (ProcessInfo.ownLoad); 0: unknown
};

struct EvenPrediction {
	double before = 0.0; // seconds per work unit of the slowest of the node's processes, now
	double after = 0.0;
	double gain = 0.0; // (before - after) / before
};

// The share of a core each of `k` processes on node j gets now: the slowest one's measured share, else cores / k.
double shareNow(const EvenNode &j, const std::vector<EvenProcess> &processes);

// r new processes on the requester i, the whole application's P processes re-shared evenly over P + r.
EvenPrediction evenSplit(const EvenNode &j, const std::vector<EvenProcess> &processes, const EvenNode &i,
			 int64_t totalProcesses, int64_t r);

// m of j's processes (the first m of `processes`) move whole to i, their data with them.
EvenPrediction evenTransfer(const EvenNode &j, const std::vector<EvenProcess> &processes, const EvenNode &i,
			    int64_t m);

} // namespace malleo::ios
