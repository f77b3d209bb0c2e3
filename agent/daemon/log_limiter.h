// SPDX-License-Identifier: Apache-2.0
// Lines per kind per window: one client sending bad messages in a loop must not
// fill the disk, yet the first of each kind is always seen.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace malleo {

class LogLimiter
{
public:
	LogLimiter(unsigned linesPerWindow, double window) : linesPerWindow_(linesPerWindow), window_(window) {}

	struct Verdict {
		bool log;		  // write this line
		uint64_t suppressedBefore; // lines of this kind dropped in the window that just ended
	};
	Verdict admit(const std::string &kind, double now);

private:
	struct Window {
		double start = 0.0;
		unsigned lines = 0;
		uint64_t suppressed = 0;
	};
	unsigned linesPerWindow_;
	double window_;
	std::map<std::string, Window> windows_;
};

} // namespace malleo
