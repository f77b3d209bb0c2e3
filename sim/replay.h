// SPDX-License-Identifier: Apache-2.0
// Replay: one simulated node, configured as a malleod would be, fed a timed
// sequence of peer and local messages; what it sends, answers and decides is
// written as JSON lines. The fidelity test feeds the same sequence to a real
// malleod and compares.
//
// The file: {"agent": <an agent configuration document with the static
// profiling module>, "until": seconds, "steps": [{"at": s, "peer": message} or
// {"at": s, "local": message}, ...]}.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace malleo::sim {

// Returns an empty string, or one line saying what is wrong with the file.
std::string replayFile(const std::string &path, const std::vector<std::string> &modulePath,
		       std::ostream &out);

} // namespace malleo::sim
