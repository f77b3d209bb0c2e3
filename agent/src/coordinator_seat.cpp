// SPDX-License-Identifier: Apache-2.0
// Who may take an application's commands and report their results (docs/protocol.md, "Who may poll and report").
// The root agent hands a command to the application's coordinator only, and takes its result only from the
// requester it was handed to: a node's key lets it coordinate what that node coordinates, not every application
// rooted where it is allowed in (issue 46).
//
// The root agent cannot see where the coordinator (world rank 0) runs: it sees who polls. So it keeps a seat per
// application, the requester whose polls it answers. This node's own processes (the local endpoint, private to the
// agent's user) always may take it. A coordinator on another node takes it when no one holds it (a new application,
// or an agent restarted under a running one: the first poll), when its holder is the same node on a new connection
// (its socket reconnected), after a migration onto its node or a merge from a node (the operations that may move
// rank 0's slot: pcm_bridge/plan/plan.h), or when the holder has not polled for several of its intervals (at least
// kSeatQuietMin seconds: a coordinator that moved without the agent's command, by MALLEO_FORCE). Never while a
// command is in flight: its result comes from whom it was handed to.
#include "coordinator_seat.h"

#include <algorithm>

#include <fmt/format.h>

namespace malleo {

namespace {

// A holder silent this long, and for kSeatQuietGaps of its longest recent interval between polls, has left the seat.
constexpr double kSeatQuietMin = 30.0;
constexpr double kSeatQuietGaps = 4.0;
// How fast a long interval between polls is forgotten (per poll).
constexpr double kGapDecay = 0.95;

bool same(const Requester &a, const Requester &b)
{
	return a.local == b.local && (a.local || (a.node == b.node && a.connection == b.connection));
}

std::string describe(const Requester &r)
{
	if (r.local)
		return "this node's local endpoint";
	return r.node.empty() ? std::string("an unauthenticated connection") : fmt::format("node '{}'", r.node);
}

} // namespace

std::string CoordinatorSeats::refusal(const std::string &appId, const Requester &from, uint64_t inFlight,
				      double now) const
{
	if (from.local)
		return {};
	const auto it = seats_.find(appId);
	if (it == seats_.end() || !it->second.bound)
		return {};
	const Seat &seat = it->second;
	const Requester &holder = seat.holder;
	if (same(holder, from))
		return {};
	if (inFlight)
		return fmt::format("'{}' has command {} in flight with its coordinator ({}); a poll from {} takes no command",
				   appId, inFlight, describe(holder), describe(from));
	if (!holder.local && !from.node.empty() && holder.node == from.node)
		return {}; // the same node on a new connection
	// Unauthenticated (plain mode), a requester cannot be told from the node a migration went to.
	if (!seat.openTo.empty() && (seat.openTo == "*" || seat.openTo == from.node || from.node.empty()))
		return {};
	const double quiet = std::max(kSeatQuietMin, kSeatQuietGaps * seat.gap);
	if (now - seat.lastPoll > quiet)
		return {};
	// The same line at every refused poll: the bridge says a refusal once until it changes.
	return fmt::format("the coordinator of '{}' polls from {}; a poll from {} takes no command until it has been "
			   "silent {:.0f} s",
			   appId, describe(holder), describe(from), quiet);
}

void CoordinatorSeats::take(const std::string &appId, const Requester &from, double now)
{
	Seat &seat = seats_[appId];
	if (seat.bound && same(seat.holder, from)) {
		seat.gap = std::max(now - seat.lastPoll, seat.gap * kGapDecay);
	} else {
		if (seat.bound)
			counters_.add("commands.coordinator_moved");
		seat.bound = true;
		seat.holder = from;
		seat.gap = 0.0;
	}
	seat.lastPoll = now;
	seat.openTo.clear();
}

std::string CoordinatorSeats::resultRefusal(uint64_t id, const Requester &sentTo, bool sentToKnown,
					    const Requester &from)
{
	if (!sentToKnown)
		return {};
	const Requester &to = sentTo;
	if (to.local == from.local &&
	    (to.local || (to.node == from.node && (to.connection.empty() || to.connection == from.connection))))
		return {};
	const bool otherConnection = !to.local && !from.local && to.node == from.node;
	return fmt::format("command {} was handed to {}; a result from {} is not taken", id, describe(to),
			   otherConnection ? describe(from) + " on another connection" : describe(from));
}

void CoordinatorSeats::open(const std::string &appId, const Command &command)
{
	// A migration puts its joiners in the slots of those that leave, rank 0's too: onto `node`, or anywhere. A merge
	// from a node removes that node's last processes, all of them (rank 0's among them) when the count says so;
	// the first that stays may be on any node. Splits and other merges keep slot 0 (pcm_bridge/plan/plan.cpp).
	std::string to;
	if (command.op == Operation::Migrate)
		to = command.node.empty() ? "*" : command.node;
	else if (command.op == Operation::Merge && !command.from.empty())
		to = "*";
	if (auto it = seats_.find(appId); it != seats_.end() && !to.empty())
		it->second.openTo = to;
}

} // namespace malleo
