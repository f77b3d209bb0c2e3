// SPDX-License-Identifier: Apache-2.0
// The coordinator seats, a component of the core (core.h): who may take an application's commands and report their
// results at its root agent (docs/protocol.md, "Who may poll and report"). Its state is the seat of each
// application; what a command in flight is, the core tells it (the command slots are the core's).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "action_commands.h"
#include "counters.h"

namespace malleo {

// Who sent a request on an application endpoint (docs/protocol.md "Who may poll and report").
struct Requester {
	bool local = true;	// this node's processes and CLI: the local endpoint, private to the agent's user
	std::string node;	// remote: the node its CURVE key belongs to (the ZAP User-Id); empty in plain mode
	std::string connection; // remote: the routing id of its connection to the remote application endpoint
};

class CoordinatorSeats
{
public:
	explicit CoordinatorSeats(Counters &counters) : counters_(counters) {}

	// Whether `from` coordinates the application (its poll takes commands): empty when it may, else why not.
	// `inFlight`: the number of the application's command in flight, 0 when none is.
	std::string refusal(const std::string &appId, const Requester &from, uint64_t inFlight, double now) const;
	// `from` polled as the coordinator.
	void take(const std::string &appId, const Requester &from, double now);
	// After an operation's result: a migration, or a merge from a node, may have moved the coordinator elsewhere.
	void open(const std::string &appId, const Command &command);
	// The application is gone.
	void forget(const std::string &appId) { seats_.erase(appId); }

	// Whether `from` may report the result of command `id`, handed to `sentTo` (`sentToKnown` false: to anyone,
	// a journal that did not say): empty when it may, else why not.
	static std::string resultRefusal(uint64_t id, const Requester &sentTo, bool sentToKnown, const Requester &from);

private:
	// Who coordinates an application, as its root agent saw from the polls: the one requester a command is
	// handed to.
	struct Seat {
		bool bound = false;
		Requester holder;
		double lastPoll = 0.0;
		double gap = 0.0;   // the longest recent time between the holder's polls
		std::string openTo; // after a migration: the node it went to may take the seat ("*": any node)
	};

	Counters &counters_;
	std::map<std::string, Seat> seats_; // app → its coordinator
};

} // namespace malleo
