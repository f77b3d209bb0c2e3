// SPDX-License-Identifier: Apache-2.0
// The seeds that do not answer. While the agent has no peer the core says hello to every seed each
// membership.join_retry seconds (Core::maintainView) and stops at its first peer, so each hello to
// a seed after the first means the one before went unanswered. Each such seed is logged at its
// first unanswered hello, then at intervals that double, up to kLongestInterval: an agent left
// alone for a day writes about 150 lines, not one per retry. Reading the core's outputs keeps this
// in the daemon: the core stays as it was.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace malleo {

class SeedWatch
{
public:
	static constexpr double kLongestInterval = 600.0;

	explicit SeedWatch(const std::vector<std::string> &seeds);

	// The core sent a hello to `endpoint` at `now`. Returns the warning to log, or an empty
	// string.
	std::string helloSent(const std::string &endpoint, double now);
	// The agent has a peer: the core asks no seed until it is alone again, and then each seed
	// starts over.
	void peerUp();

private:
	struct Seed {
		unsigned hellos = 0;
		double first = 0.0; // its first hello since the agent was last alone
		double lastWarning = 0.0;
		double interval = 0.0; // until the next warning; 0 before the first
	};
	std::map<std::string, Seed> seeds_;
};

} // namespace malleo
