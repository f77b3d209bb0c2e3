// SPDX-License-Identifier: Apache-2.0
// The test-side reference layouts and the simulated execution of a schedule.
#include "simulated_ranks.h"

namespace malleo::pcm::testing {

std::vector<std::vector<std::int64_t>> contents(const Layout& layout)
{
	std::vector<std::vector<std::int64_t>> result(layout.ranks.size());
	auto slots = static_cast<std::int64_t>(layout.ranks.size());
	switch (layout.distribution) {
	case Distribution::Independent:
	case Distribution::Block1d: {
		std::int64_t g = 0;
		for (std::size_t slot = 0; slot < layout.counts.size(); ++slot)
			for (std::int64_t k = 0; k < layout.counts[slot]; ++k)
				result[slot].push_back(g++);
		break;
	}
	case Distribution::BlockCyclic1d:
		for (std::int64_t g = 0; g < layout.globalCount; ++g)
			result[static_cast<std::size_t>((g / layout.block) % slots)].push_back(g);
		break;
	case Distribution::BlockCyclic2d:
		for (std::int64_t i = 0; i < layout.rows; ++i)
			for (std::int64_t j = 0; j < layout.cols; ++j) {
				std::int64_t r = (i / layout.blockRows) % layout.prow;
				std::int64_t c = (j / layout.blockCols) % layout.pcol;
				result[static_cast<std::size_t>(r * layout.pcol + c)].push_back(i * layout.cols + j);
			}
		break;
	}
	return result;
}

namespace {

std::map<int, std::size_t> slotOfRank(const Layout& layout)
{
	std::map<int, std::size_t> slots;
	for (std::size_t slot = 0; slot < layout.ranks.size(); ++slot)
		slots[layout.ranks[slot]] = slot;
	return slots;
}

}  // namespace

Applied apply(const Schedule& schedule, const Layout& from, const Layout& to,
	      const std::vector<std::vector<std::int64_t>>& old_contents)
{
	Applied applied;
	std::vector<std::vector<int>> writes(to.ranks.size());
	for (std::size_t slot = 0; slot < to.ranks.size(); ++slot) {
		auto count = static_cast<std::size_t>(localCount(to, static_cast<int>(slot)));
		applied.contents.emplace_back(count, -1);
		writes[slot].assign(count, 0);
	}
	auto old_slots = slotOfRank(from);
	auto new_slots = slotOfRank(to);
	for (std::size_t t = 0; t < schedule.transfers.size(); ++t) {
		const Transfer& transfer = schedule.transfers[t];
		std::string where = "transfer " + std::to_string(t) + " (" + std::to_string(transfer.from) + " -> " +
				    std::to_string(transfer.to) + "): ";
		if (!old_slots.count(transfer.from) || !new_slots.count(transfer.to)) {
			applied.problems.push_back(where + "rank outside its layout");
			continue;
		}
		if (transfer.step < 0 || transfer.step >= schedule.steps)
			applied.problems.push_back(where + "step out of range");
		const auto& source = old_contents[old_slots[transfer.from]];
		std::vector<std::int64_t> carried;
		for (const Segment& segment : transfer.source) {
			if (segment.count <= 0 || segment.offset < 0 ||
			    segment.offset + segment.count > static_cast<std::int64_t>(source.size())) {
				applied.problems.push_back(where + "bad source segment");
				continue;
			}
			carried.insert(carried.end(), source.begin() + segment.offset,
				       source.begin() + segment.offset + segment.count);
		}
		if (carried.empty())
			applied.problems.push_back(where + "empty");
		std::size_t next = 0;
		std::size_t new_slot = new_slots[transfer.to];
		auto& destination = applied.contents[new_slot];
		for (const Segment& segment : transfer.destination) {
			if (segment.count <= 0 || segment.offset < 0 ||
			    segment.offset + segment.count > static_cast<std::int64_t>(destination.size())) {
				applied.problems.push_back(where + "bad destination segment");
				continue;
			}
			for (std::int64_t k = 0; k < segment.count && next < carried.size(); ++k, ++next) {
				auto index = static_cast<std::size_t>(segment.offset + k);
				destination[index] = carried[next];
				++writes[new_slot][index];
			}
		}
		if (next != carried.size())
			applied.problems.push_back(where + "source and destination sizes differ");
		if (transfer.from != transfer.to)
			applied.moved += static_cast<std::int64_t>(carried.size());
	}
	for (std::size_t slot = 0; slot < writes.size(); ++slot)
		for (std::size_t k = 0; k < writes[slot].size(); ++k)
			if (writes[slot][k] != 1)
				applied.problems.push_back("new slot " + std::to_string(slot) + " element " +
							   std::to_string(k) + " written " +
							   std::to_string(writes[slot][k]) + " times");
	return applied;
}

}  // namespace malleo::pcm::testing
