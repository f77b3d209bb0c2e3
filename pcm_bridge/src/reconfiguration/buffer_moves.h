// SPDX-License-Identifier: Apache-2.0
// An operation's buffers moving (operation.cpp's middle step): for each buffer the layouts before and after, where
// the new elements go (kept in place, a prepared block, a fresh one), pages taken over from shared blocks, and the
// executor's transfers. What moved is kept pending until every participant knows the whole operation succeeded:
// then keep(), or undo(), which leaves every process's buffers as they were.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/shared_pages.h"
#include "plan/plan.h"
#include "reconfiguration/buffers.h"
#include "reconfiguration/participants.h"
#include "reconfiguration/prepared_blocks.h"
#include "redistribution/schedule.h"

namespace malleo::pcm {

class BufferMoves
{
public:
	BufferMoves(std::vector<BufferMove> &moves, const Participants &participants, const Plan &plan);

	// Collective over the participants, buffer after buffer. A joiner's new blocks come from `prepared` where
	// they fit. `error` and `why` carry what went wrong here so far, and what goes wrong now: a process that
	// cannot take part (no memory, bad schedule) would leave its peers waiting for transfers that never come, so
	// all of them skip a buffer's move once any of them has failed.
	void move(PreparedBlocks &prepared, int &error, std::string &why);
	// Bytes this process sent to others.
	std::int64_t sent() const { return sent_; }

	// Collective over the participants, once all of them know the operation succeeded: the old buffers may give up
	// their pages. `moved` is this process's bytes sent, in; all processes' sum, out.
	void keep(std::int64_t &moved);
	// After a failure: the old buffers as they were, the new blocks allocated here freed.
	void undo();

private:
	bool layouts(BufferMove &move, Layout &from, Layout &to, int &error, std::string &why) const;
	void placeNew(PreparedBlocks &prepared, BufferMove &move, std::size_t index, const Layout &to, int &error,
		      std::string &why);
	void transfer(BufferMove &move, std::size_t index, bool anyShares, int &error, std::string &why);

	std::vector<BufferMove> &moves_;
	const Participants &participants_;
	const Plan &plan_;
	std::vector<Schedule> schedules_;
	// The trailing halos of blocks grown in place, which the elements received past them overwrite: put back if
	// the operation fails, so that the program carries on with its buffers as they were.
	std::vector<std::vector<unsigned char>> overwrittenHalos_;
	// Pages taken over from shared blocks, each buffer's pending until every process knows the move succeeded.
	std::vector<TakenPages> taken_;
	std::int64_t sent_ = 0;
	std::int64_t prepared_ = 0;  // bytes of its new buffers this process had allocated and faulted in while it started
};

} // namespace malleo::pcm
