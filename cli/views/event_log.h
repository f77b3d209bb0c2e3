// SPDX-License-Identifier: Apache-2.0
// Agents' event logs (<run_dir>/events.jsonl, one JSON event per line) read
// onto one time axis, for `malleo timeline` and `malleo plot`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "failure.h"

namespace malleo::cli {

struct LoggedEvent {
	double wall = 0; // unix seconds: the file's log_started wall + the event's t
	double time = 0; // seconds since the earliest event of all the files
	nlohmann::json event;
	std::size_t run = 0; // the agent's run it belongs to: a file's lines after a log_started of one clock
};

struct EventLog {
	std::vector<LoggedEvent> events; // in time order; the same event given twice kept once
	std::size_t malformed = 0; // lines that are not an event object with a type and a numeric t
	std::size_t unanchored =
	    0; // events before any log_started line of their file: no wall clock
	std::vector<std::string> where; // "file:line" of the first few skipped lines
	std::size_t sessions = 0;       // runs of agents that overlap in time, the files' sessions
	std::size_t sessionsLeftOut = 0; // those before the latest, not in events (latestSession())
	double sessionStart = 0;        // wall clock of the first event of the latest session
};

// Reads every file; an unreadable one is a failure (bad input), a bad line is
// only counted. For a file named events.jsonl, the decisions.jsonl beside it is read too, for the runs of the agent
// the first holds: decisions that junk pushed out of events.jsonl (docs/cli.md).
std::optional<EventLog> readEventLogs(const std::vector<std::string> &files, Failure &failure);

// Keeps the latest session of the files only: the runs of agents that overlap in time with the
// one that ended last (a cluster's agents, the nodes added to it, an agent restarted under it).
// Event logs outlive `malleo cluster down`, and decisions.jsonl keeps every run: the files may hold
// clusters of yesterday. Times are counted again from its first event.
void latestSession(EventLog &log);

// One line saying what latestSession() left out ("showing the latest session, from 12:03:04.123;
// 2 earlier left out: --all-sessions shows them"), empty when nothing was.
std::string sessionNote(const EventLog &log);

// One warning line for the skipped lines ("skipped 2 malformed lines (a.jsonl:3, ...)"), empty when
// none.
std::string skippedWarning(const EventLog &log);

} // namespace malleo::cli
