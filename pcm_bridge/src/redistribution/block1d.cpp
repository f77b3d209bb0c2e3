// SPDX-License-Identifier: Apache-2.0
// 1D block with adjacency (seed 000, Fig. 4; the heat columns). Slot p holds the contiguous global range
// [sum of counts before p, that plus counts[p]) in both layouts, so the data a new slot needs lies in the old slots
// whose ranges overlap its own. Because the new layout is in rank order too, those are its neighbours: data shifts
// left or right, never across. A merge walk of the two prefix sums finds each overlap once, in O(n + m), and each is
// one transfer of one contiguous run (a local copy when both slots belong to the same rank): at most n + m - 1
// transfers. Unlike Fig. 4's director, no element passes through an intermediate worker: every element moves at
// most once, straight to its final place. All transfers are in step 0.
#include <algorithm>

#include "redistribution/distribution_schedules.h"

namespace malleo::pcm::detail {

Schedule block1dSchedule(const Layout& from, const Layout& to)
{
	Schedule result;
	std::size_t i = 0, j = 0;
	std::int64_t old_begin = 0, new_begin = 0;  // global start of slot i of the old layout, slot j of the new
	while (i < from.ranks.size() && j < to.ranks.size()) {
		std::int64_t old_end = old_begin + from.counts[i];
		std::int64_t new_end = new_begin + to.counts[j];
		std::int64_t begin = std::max(old_begin, new_begin);
		std::int64_t end = std::min(old_end, new_end);
		if (end > begin)
			result.transfers.push_back({from.ranks[i],
						    to.ranks[j],
						    0,
						    {{begin - old_begin, end - begin}},
						    {{begin - new_begin, end - begin}}});
		// Advance whichever range ends first (both when they end together); empty slots pass at once.
		bool old_done = old_end <= new_end;
		bool new_done = new_end <= old_end;
		if (old_done) {
			old_begin = old_end;
			++i;
		}
		if (new_done) {
			new_begin = new_end;
			++j;
		}
	}
	return result;
}

}  // namespace malleo::pcm::detail
