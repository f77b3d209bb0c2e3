// SPDX-License-Identifier: Apache-2.0
// `malleo timeline`: an application's reconfigurations and the nodes' joins,
// leaves and drains from agents' event logs, in time order, with the iteration
// and throughput at each.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "app_history.h"
#include "views.h"
#include "event_log.h"
#include "human_units.h"
#include "reply_fields.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

// The iteration a row happened at: the one its event names, else the last one named plus what
// app_progress counted since (app_progress counts only since the agent saw the application start:
// an estimate).
class IterationClock
{
public:
	std::optional<long long> at(const HistoryEvent &row, const ProgressPoint *progress)
	{
		const long long counted = progress ? progress->counted : 0;
		if (row.iteration) {
			named_ = *row.iteration;
			countedThen_ = counted;
			return row.iteration;
		}
		if (!progress)
			return std::nullopt;
		return named_ ? *named_ + (counted - countedThen_) : counted;
	}

private:
	std::optional<long long> named_;
	long long countedThen_ = 0;
};

// Microseconds are what agents' clocks can tell apart; the rest is the sum's rounding.
double micro(double seconds)
{
	return std::round(seconds * 1e6) / 1e6;
}

std::string processes(const HistoryEvent &row)
{
	if (row.before && row.after)
		return fmt::format("{} -> {}", *row.before, *row.after);
	return row.after ? std::to_string(*row.after) : "-";
}

nlohmann::json jsonRow(const HistoryEvent &row, const ProgressPoint *progress,
		       std::optional<long long> iteration, double origin)
{
	const nlohmann::json &e = *row.event;
	nlohmann::json j = {
	    {"time", micro(row.time)},
	    {"wall", micro(origin + row.time)},
	    {"iteration", iteration ? nlohmann::json(*iteration) : nlohmann::json(nullptr)},
	    {"throughput", progress ? nlohmann::json(progress->rate) : nlohmann::json(nullptr)},
	    {"event", row.what},
	    {"why", row.why},
	    {"type", e["type"]},
	    {"agent", e.value("agent", "")}};
	if (row.reconfiguration) {
		j["ok"] = row.ok;
		for (const char *key : {"op", "count", "node", "from", "before", "after",
					"decision", "trigger", "origin", "duration"})
			if (e.contains(key))
				j[key] = e[key];
	}
	return j;
}

} // namespace

int timelineCommand(const TimelineOptions &timeline)
{
	Failure failure;
	std::optional<EventLog> log = readEventLogs(timeline.files, failure);
	if (!log)
		return report(failure);
	if (!timeline.allSessions)
		latestSession(*log);
	std::string note;
	const std::string app = chooseApp(*log, timeline.app, note, failure);
	if (!failure.line.empty())
		return report(failure);
	// Only once the input is known good enough to show: a refusal stays one line.
	if (std::string warning = skippedWarning(*log); !warning.empty())
		report({kExitOk, warning});
	if (!note.empty())
		report({kExitOk, note});
	if (std::string sessions = sessionNote(*log); !sessions.empty())
		report({kExitOk, sessions});
	const AppHistory history = appHistory(*log, app);
	if (app.empty() && history.events.empty())
		return report({kExitFailed,
			       "no application and no node event in the files (are they agents' "
			       "events.jsonl?)"});
	const double origin = log->events.empty() ? 0 : log->events.front().wall;

	if (timeline.json) {
		nlohmann::json rows = nlohmann::json::array();
		IterationClock clock;
		for (const HistoryEvent &row : history.events) {
			const ProgressPoint *progress = progressAt(history, row.time);
			rows.push_back(jsonRow(row, progress, clock.at(row, progress), origin));
		}
		nlohmann::json out = {
		    {"app", app.empty() ? nlohmann::json(nullptr) : nlohmann::json(app)},
		    {"files", timeline.files},
		    {"start", origin},
		    {"progress_reports", history.progress.size()},
		    {"skipped", {{"malformed", log->malformed}, {"unanchored", log->unanchored}}},
		    {"rows", std::move(rows)}};
		std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
			  << '\n';
		return kExitOk;
	}

	using namespace std::chrono;
	const auto start = system_clock::time_point(
	    duration_cast<system_clock::duration>(duration<double>(origin)));
	const auto reconfigurations =
	    std::count_if(history.events.begin(), history.events.end(),
			  [](const HistoryEvent &r) { return r.reconfiguration; });
	std::cout << fmt::format(
	    "{}: {} reconfiguration{}, {} progress report{}; time 0 = {} (the earliest event)\n",
	    app.empty() ? "no application" : shownText(app), reconfigurations,
	    reconfigurations == 1 ? "" : "s", history.progress.size(),
	    history.progress.size() == 1 ? "" : "s", formatClock(start));
	if (history.events.empty()) {
		std::cout << "no reconfiguration and no node event\n";
		return kExitOk;
	}
	TextTable table({"TIME", "ITERATION", "IT/S", "PROCESSES", "EVENT", "WHY"});
	for (std::size_t c : {0, 1, 2})
		table.alignRight(c);
	IterationClock clock;
	for (const HistoryEvent &row : history.events) {
		const ProgressPoint *progress = progressAt(history, row.time);
		std::optional<long long> iteration = clock.at(row, progress);
		table.addRow({fmt::format("{:.2f}", row.time),
			      iteration ? std::to_string(*iteration) : "-",
			      progress ? fmt::format("{:.2f}", progress->rate) : "-",
			      processes(row), row.what, row.why.empty() ? "-" : row.why});
	}
	std::cout << table.render();
	return kExitOk;
}

} // namespace malleo::cli
