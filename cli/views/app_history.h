// SPDX-License-Identifier: Apache-2.0
// What agents' event logs say of one application: its throughput over time
// (app_progress) and its reconfigurations (reconf_result, command_result),
// and what happened to the nodes (joins, leaves, drains).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "event_log.h"
#include "failure.h"

namespace malleo::cli {

struct ProgressPoint {
	double time = 0;
	double rate = 0;       // iterations per second: 1 / the mean iteration time reported
	long processes = 0;    // the active processes it was measured on
	long long counted = 0; // iterations counted by app_progress events up to this one
};

// A reconfiguration, or one refused or failed; also a node joining, leaving or draining.
struct HistoryEvent {
	double time = 0;
	std::string what; // "split 1 -> n3", "migrate 1 n2 -> n1", "node n3 joined", "n2 drains"
	std::string why;
	bool reconfiguration = false;
	bool ok = true;
	std::optional<long long> iteration; // the one the event names
	std::optional<long> before, after;  // processes
	const nlohmann::json *event = nullptr;
};

struct AppHistory {
	std::string app; // empty: no application in the files
	std::vector<ProgressPoint> progress;
	std::vector<HistoryEvent>
	    events; // reconfigurations of app and the nodes' changes, in time order
};

// The application to show: `requested` (a failure, bad input, when the files never name it), else
// the one with the most app_progress events (then the most events). `note` says which was chosen
// when there were several; empty when the files name none.
std::string chooseApp(const EventLog &log, const std::optional<std::string> &requested,
		      std::string &note, Failure &failure);

AppHistory appHistory(const EventLog &log, const std::string &app);

// The iterations counted up to time and the throughput then (the latest app_progress at or before
// it).
const ProgressPoint *progressAt(const AppHistory &history, double time);

} // namespace malleo::cli
