// SPDX-License-Identifier: Apache-2.0
// Spatially independent data (seed 000, Fig. 3): only the counts matter, so the least data moves when every process
// that stays keeps what it can and the rest flows from the processes with a surplus to those with a deficit.
//
// The rule: a rank in both layouts keeps the first min(old, new) elements of its old buffer, at the start of its
// new buffer (one local copy). Its surplus, the tail of its old buffer, goes out; a deficit fills the tail of its
// new buffer. A rank only in the old layout has all of its data as surplus; a rank only in the new one, all of its
// count as deficit. Shrinking ranks (old slot order) are then matched to growing ranks (new slot order) by a merge
// walk, as Fig. 3 does: every transfer exhausts a surplus or fills a deficit, so there are at most s + e - 1
// transfers between ranks for s shrinking and e growing ranks. Counting the local copies too, each of the shrinking,
// growing and keeping ranks can be charged to a slot of its own, so the whole schedule has at most n + m transfers
// for n old and m new slots. Nothing else could move less: the surplus has to leave its rank whatever the rule.
// All transfers are in step 0 — no rank waits on another's order, so they all run at once.
#include <algorithm>
#include <map>

#include "redistribution/distribution_schedules.h"

namespace malleo::pcm::detail {

namespace {

struct Flow {
	int rank;
	std::int64_t offset;  // where the surplus starts in the old buffer, or the deficit in the new one
	std::int64_t count;
};

}  // namespace

Schedule independentSchedule(const Layout& from, const Layout& to)
{
	std::map<int, std::int64_t> new_count;
	for (std::size_t slot = 0; slot < to.ranks.size(); ++slot)
		new_count[to.ranks[slot]] = to.counts[slot];
	std::map<int, std::int64_t> kept;

	Schedule result;
	std::vector<Flow> shrinking;
	for (std::size_t slot = 0; slot < from.ranks.size(); ++slot) {
		int rank = from.ranks[slot];
		std::int64_t old_count = from.counts[slot];
		auto target = new_count.find(rank);
		std::int64_t keep = target == new_count.end() ? 0 : std::min(old_count, target->second);
		if (target != new_count.end())
			kept[rank] = keep;
		if (keep > 0)
			result.transfers.push_back({rank, rank, 0, {{0, keep}}, {{0, keep}}});
		if (old_count > keep)
			shrinking.push_back({rank, keep, old_count - keep});
	}
	std::vector<Flow> growing;
	for (std::size_t slot = 0; slot < to.ranks.size(); ++slot) {
		auto keep = kept.find(to.ranks[slot]);
		std::int64_t have = keep == kept.end() ? 0 : keep->second;
		if (to.counts[slot] > have)
			growing.push_back({to.ranks[slot], have, to.counts[slot] - have});
	}

	// The totals are equal (schedule() checked), so both lists run out together.
	std::size_t s = 0, g = 0;
	while (s < shrinking.size() && g < growing.size()) {
		Flow& source = shrinking[s];
		Flow& sink = growing[g];
		std::int64_t count = std::min(source.count, sink.count);
		result.transfers.push_back(
		    {source.rank, sink.rank, 0, {{source.offset, count}}, {{sink.offset, count}}});
		source.offset += count;
		source.count -= count;
		sink.offset += count;
		sink.count -= count;
		if (source.count == 0)
			++s;
		if (sink.count == 0)
			++g;
	}
	return result;
}

}  // namespace malleo::pcm::detail
