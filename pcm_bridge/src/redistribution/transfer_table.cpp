// SPDX-License-Identifier: Apache-2.0
// The per-slot-pair transfer table of the block-cyclic schedules.
#include "redistribution/distribution_schedules.h"

namespace malleo::pcm::detail {

namespace {

void appendSegment(std::vector<Segment>& segments, std::int64_t offset, std::int64_t count)
{
	if (!segments.empty() && segments.back().offset + segments.back().count == offset) {
		segments.back().count += count;
		return;
	}
	segments.push_back({offset, count});
}

}  // namespace

TransferTable::TransferTable(const Layout& from, const Layout& to)
    : from_(from), to_(to), index_(from.ranks.size() * to.ranks.size(), -1)
{
}

void TransferTable::add(int old_slot, std::int64_t source_offset, int new_slot, std::int64_t destination_offset,
			std::int64_t count)
{
	int& index = index_[static_cast<std::size_t>(old_slot) * to_.ranks.size() + static_cast<std::size_t>(new_slot)];
	if (index < 0) {
		index = static_cast<int>(transfers_.size());
		Transfer transfer;
		transfer.from = from_.ranks[static_cast<std::size_t>(old_slot)];
		transfer.to = to_.ranks[static_cast<std::size_t>(new_slot)];
		transfers_.push_back(std::move(transfer));
	}
	Transfer& transfer = transfers_[static_cast<std::size_t>(index)];
	appendSegment(transfer.source, source_offset, count);
	appendSegment(transfer.destination, destination_offset, count);
}

Schedule TransferTable::take()
{
	Schedule schedule;
	schedule.transfers = std::move(transfers_);
	transfers_.clear();
	return schedule;
}

}  // namespace malleo::pcm::detail
