// SPDX-License-Identifier: Apache-2.0
// Runs a schedule on plain vectors standing for the ranks' buffers, and says independently of the schedule code
// which global elements each slot holds, so tests compare what a schedule does with what the layouts mean.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "redistribution/schedule.h"

namespace malleo::pcm::testing {

// Per slot, the global index of each local element. Built by visiting the global index space in order and
// appending each element to its owner, which gives each slot's elements in local order for every distribution
// here (local order follows global order; row-major for 2D). For independent layouts it is the block1d reading.
std::vector<std::vector<std::int64_t>> contents(const Layout& layout);

// What applying a schedule produced: per new slot, the global indices it received (-1 where nothing was
// written), and every problem seen (out-of-range segment, element written twice or never, empty transfer, rank
// outside its layout). `moved` counts elements between different ranks.
struct Applied {
	std::vector<std::vector<std::int64_t>> contents;
	std::vector<std::string> problems;
	std::int64_t moved = 0;
};

Applied apply(const Schedule& schedule, const Layout& from, const Layout& to,
	      const std::vector<std::vector<std::int64_t>>& old_contents);

}  // namespace malleo::pcm::testing
