// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/buffer_moves.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "executor/executor.h"
#include "executor/page_adoption.h"
#include "memory/shared_pages.h"
#include "reconfiguration/phase_times.h"

namespace malleo::pcm {

namespace {

// The bytes `schedule` delivers into `rank`'s new buffer of `move`: all it receives but the elements that stay where
// they are in a buffer kept in place.
std::int64_t delivered(const Schedule &schedule, int rank, const BufferMove &move)
{
	std::int64_t elements = 0;
	for (const Transfer &transfer : schedule.transfers) {
		if (transfer.to != rank)
			continue;
		forEachChunk(transfer, [&](std::int64_t source, std::int64_t destination, std::int64_t count) {
			if (transfer.from != rank || source != destination || move.newData != move.oldData)
				elements += count;
		});
	}
	return elements * move.elementBytes();
}

} // namespace

BufferMoves::BufferMoves(std::vector<BufferMove> &moves, const Participants &participants, const Plan &plan)
	: moves_(moves), participants_(participants), plan_(plan), schedules_(moves.size()),
	  overwrittenHalos_(moves.size()), taken_(moves.size())
{
}

// Collective: the buffer's layouts before and after the plan, from every participant's count, and its new count here
// (`error` set when its buffer has no room for it). Whether any participant makes shared blocks: if one does, all of
// them look for pages to take over (a collective, so the setting of one process decides for all).
bool BufferMoves::layouts(BufferMove &move, Layout &from, Layout &to, int &error, std::string &why) const
{
	const int new_slot = participants_.newSlot;
	std::vector<std::int64_t> counts(2 * participants_.all.size(), 0);
	const bool shares = sharesPages() || insideShared(move.oldData, 1) || insideShared(move.newData, 1);
	const std::int64_t mine[2] = {participants_.joiner ? 0 : move.oldCount, shares};
	MPI_Allgather(mine, 2, MPI_INT64_T, counts.data(), 2, MPI_INT64_T, participants_.comm);
	bool any_shares = false;
	for (std::size_t r = 0; r < participants_.all.size(); ++r)
		any_shares = any_shares || counts[2 * r + 1];
	from.distribution = to.distribution = move.spec.distribution;
	for (int w : plan_.before) {
		from.ranks.push_back(participants_.rankOf(w));
		from.counts.push_back(counts[2 * static_cast<std::size_t>(participants_.rankOf(w))]);
		from.globalCount += from.counts.back();
	}
	for (int w : plan_.after)
		to.ranks.push_back(participants_.rankOf(w));
	to.globalCount = from.globalCount;
	to.counts = targetCounts(to.globalCount, static_cast<int>(plan_.after.size()), plan_.weights);
	move.newCount = new_slot < 0 ? 0 : to.counts[static_cast<std::size_t>(new_slot)];
	if (new_slot >= 0 && move.newData && move.capacity >= 0 && move.newCount > move.capacity) {
		error = 1;
		why = move.spec.name + " needs room for " + std::to_string(move.newCount) + " elements, the buffer holds " +
		      std::to_string(move.capacity);
	}
	return any_shares;
}

// Where this process's new elements of the buffer go, when it has none given: its old block, kept in place (its
// trailing halo saved when it grows), else a prepared block, else a fresh one.
void BufferMoves::placeNew(PreparedBlocks &prepared, BufferMove &move, std::size_t index, const Layout &to,
			   int &error, std::string &why)
{
	const int new_slot = participants_.newSlot;
	const std::int64_t bytes = move.elementBytes();
	const std::int64_t room = std::max(move.oldCount, move.oldCapacity);
	if (new_slot >= 0 && !move.newData && move.inPlace && move.oldData && move.newCount <= room &&
	    keepsInPlace(schedules_[index], participants_.me, move.oldCount)) {
		move.newData = move.oldData;
		if (move.newCount > move.oldCount) {
			const auto *halo =
			    static_cast<const unsigned char *>(move.pastHalo(move.oldData)) + move.oldCount * bytes;
			overwrittenHalos_[index].assign(halo, halo + move.spec.halo * bytes);
		}
	} else if (new_slot >= 0 && !move.newData) {
		move.newData = prepared.take(move);
		prepared_ += move.newData ? move.newCount * bytes : 0;
		if (!move.newData)
			move.newData = allocateElements(move.newCount, move.spec.halo, bytes, false,
							 firstElement(move.spec.distribution, to.counts, new_slot));
		move.allocated = true;
		if (!move.newData) {
			error = 1;
			why = "out of memory for " + move.spec.name;
		}
	}
}

// Collective: the buffer's elements move, pages taken over from shared blocks first when any participant makes
// them, the executor's transfers for the rest.
void BufferMoves::transfer(BufferMove &move, std::size_t index, bool anyShares, int &error, std::string &why)
{
	Schedule &schedule = schedules_[index];
	MPI_Datatype element;
	MPI_Type_contiguous(static_cast<int>(move.spec.elementLength), mpiType(move.spec.base), &element);
	MPI_Type_commit(&element);
	// A process that cannot take part (no memory, bad schedule) would leave its peers waiting for
	// transfers that never come: all of them skip the move together.
	int anyone = error;
	MPI_Allreduce(MPI_IN_PLACE, &anyone, 1, MPI_INT, MPI_MAX, participants_.comm);
	if (!anyone && anyShares) {
		Schedule rest;
		const int rc = takePages(participants_.comm, participants_.me, schedule, move.pastHalo(move.oldData),
					 participants_.joiner ? 0 : move.oldCount, move.pastHalo(move.newData),
					 move.newCount, static_cast<std::size_t>(move.elementBytes()), taken_[index], rest);
		schedule = std::move(rest);  // what is left to copy, here and in finishLocal
		if (rc != MPI_SUCCESS) {
			error = 1;
			why = "taking over the pages of " + move.spec.name + " failed";
		}
	}
	if (!anyone) {
		ExecuteOptions options;
		options.deferLocal = move.discardOld;
		options.held = move.oldCount;
		const ExecuteResult result = execute(participants_.comm, schedule, move.pastHalo(move.oldData),
						     move.pastHalo(move.newData), element, options);
		sent_ += result.bytesSent;
		if (result.mpiError != MPI_SUCCESS) {
			error = 1;
			why = "moving " + move.spec.name + " failed (MPI error " + std::to_string(result.mpiError) + ")";
		}
	}
	MPI_Type_free(&element);
}

void BufferMoves::move(PreparedBlocks &prepared, int &error, std::string &why)
{
	for (auto &move : moves_) {
		const std::size_t index = static_cast<std::size_t>(&move - moves_.data());
		Layout from, to;
		const bool any_shares = layouts(move, from, to, error, why);
		try {
			schedules_[index] = pcm::schedule(from, to);
		} catch (const std::exception &e) {
			error = 1;
			why = e.what();
		}
		placeNew(prepared, move, index, to, error, why);
		transfer(move, index, any_shares, error, why);
	}
}

void BufferMoves::keep(std::int64_t &moved)
{
	// Every process knows the data moved: the old buffers may give up their pages (finishLocal).
	std::int64_t totals[4] = {moved, prepared_, 0, 0};
	for (std::size_t i = 0; i < moves_.size(); ++i) {
		totals[2] += taken_[i].bytesTaken();
		totals[3] += delivered(schedules_[i], participants_.me, moves_[i]);
	}
	MPI_Allreduce(MPI_IN_PLACE, totals, 4, MPI_INT64_T, MPI_SUM, participants_.comm);
	moved = totals[0];
	phaseTimes().prepared(totals[1]);
	phaseTimes().taken(totals[2], totals[3]);
	for (std::size_t i = 0; i < moves_.size(); ++i) {
		BufferMove &move = moves_[i];
		// Before keep(): an element at the end of a run taken over as pages straddles one of them, and is
		// copied whole from the old block, which maps fresh pages where it gave some away once kept.
		const std::int64_t pages = !move.discardOld ? 0 :
			finishLocal(schedules_[i], participants_.me, move.pastHalo(move.oldData), move.pastHalo(move.newData),
				    static_cast<std::size_t>(move.elementBytes()));
		taken_[i].keep();
		const bool in_place = move.newData && move.newData == move.oldData;
		phaseTimes().kept(in_place ? std::min(move.newCount, move.oldCount) * move.elementBytes() : 0, pages);
		if (in_place && move.newCount > move.oldCount)  // zeroed, as allocateElements leaves a halo
			std::memset(static_cast<unsigned char *>(move.pastHalo(move.newData)) +
					    move.newCount * move.elementBytes(),
				    0, static_cast<std::size_t>(move.spec.halo * move.elementBytes()));
	}
}

void BufferMoves::undo()
{
	for (auto &move : moves_) {
		// Before the halo goes back: a block grown in place maps its own pages again where it took others'.
		taken_[static_cast<std::size_t>(&move - moves_.data())].abandon();
		const auto &halo = overwrittenHalos_[static_cast<std::size_t>(&move - moves_.data())];
		if (!halo.empty())
			std::memcpy(static_cast<unsigned char *>(move.pastHalo(move.oldData)) +
					    move.oldCount * move.elementBytes(),
				    halo.data(), halo.size());
		if (move.allocated)
			releaseElements(move.newData);
		if (move.allocated || move.newData == move.oldData)
			move.newData = nullptr;
		move.allocated = false;
	}
}

} // namespace malleo::pcm
