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
};

struct EventLog {
	std::vector<LoggedEvent> events; // in time order; the same event given twice kept once
	std::size_t malformed = 0; // lines that are not an event object with a type and a numeric t
	std::size_t unanchored =
	    0; // events before any log_started line of their file: no wall clock
	std::vector<std::string> where; // "file:line" of the first few skipped lines
};

// Reads every file; an unreadable one is a failure (bad input), a bad line is
// only counted. For a file named events.jsonl, the decisions.jsonl beside it is read too, for the runs of the agent
// the first holds: decisions that junk pushed out of events.jsonl (docs/cli.md).
std::optional<EventLog> readEventLogs(const std::vector<std::string> &files, Failure &failure);

// One warning line for the skipped lines ("skipped 2 malformed lines (a.jsonl:3, ...)"), empty when
// none.
std::string skippedWarning(const EventLog &log);

} // namespace malleo::cli
