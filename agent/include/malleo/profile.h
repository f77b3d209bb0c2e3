// SPDX-License-Identifier: Apache-2.0
// What an agent knows about a node: the numbers of the policies (seed 001, section 5).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace malleo {

struct NodeProfile {
	double pw = 1.0;	// processing power: cores × per-core speed, relative units
	double apw = 1.0;	// available fraction of the node's CPU, 0..1
	double upw = 0.0;	// used fraction of the node's CPU, 0..1
	double sigma = 0.0;	// σ_i: standard deviation of apw over the last k intervals
	double ctxswRate = 0.0; // context switches per second
	int cores = 1;
	int processes = 0;	// MPI processes of malleable applications on the node
};

nlohmann::json toJson(const NodeProfile &profile);

// Reads a profile from a message. Returns an empty string on success, otherwise
// the field that is missing, ill-typed or out of range.
std::string fromJson(const nlohmann::json &j, NodeProfile &profile);

} // namespace malleo
