// SPDX-License-Identifier: Apache-2.0
// What one refresh of `malleo top` shows: a row per node, built from the last
// status reply of each, whatever the output (terminal, plain text, JSON).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace malleo::cli {

struct NodeSnapshot {
	std::string name;                    // node name, or the endpoint
	std::string endpoint;
	std::optional<nlohmann::json> status; // last status_reply, if fresh
	std::string problem;                 // why there is none
};

// The table of nodes, a line per element, header first; a TOTAL row sums the
// counters when there is more than one node.
std::vector<std::string> nodeTable(const std::vector<NodeSnapshot> &nodes);

// What the columns count, two lines of at most 110 characters.
std::vector<std::string> tableLegend();

nlohmann::json toJson(const NodeSnapshot &node);

} // namespace malleo::cli
