// SPDX-License-Identifier: Apache-2.0
#include "event_log.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "human_units.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

// Enough places for a person to find the bad lines; the count says how many there are.
constexpr std::size_t kPlacesNamed = 3;
constexpr const char *kEventsFile = "events.jsonl";
constexpr const char *kDecisionsFile = "decisions.jsonl";

bool isEvent(const nlohmann::json &j)
{
	if (!j.is_object())
		return false;
	auto type = j.find("type");
	auto t = j.find("t");
	return type != j.end() && type->is_string() && t != j.end() && t->is_number();
}

// The runs a file's lines belong to: an agent's start, as the wall clock of its t = 0, in milliseconds.
using Runs = std::set<long long>;

// Runs of agents closer than this in time are one session: an agent restarted under a running
// application, a node that starts as another stops.
constexpr double kSessionGap = 5.0;

struct Run {
	double start = INFINITY, end = -INFINITY;
};

struct Reader {
	EventLog &log;
	std::set<std::tuple<std::string, long long, long long>> seen;
	std::map<std::pair<std::size_t, long long>, std::size_t> runIds; // (file, clock) -> run
	std::size_t fileIndex = 0;

	void skip(const std::string &file, std::size_t line)
	{
		if (log.where.size() < kPlacesNamed)
			log.where.push_back(fmt::format("{}:{}", file, line));
	}

	// Reads one file into the log. With `only`, a line counts only if its run is one of them, and a bad line is not
	// counted (the file was not asked for); `runs`, when given, gets the runs the file holds.
	bool read(const std::string &file, Failure &failure, const Runs *only, Runs *runs)
	{
		std::ifstream in(file);
		if (!in) {
			failure = {kExitBadInput, fmt::format("cannot read {}: {}", file, std::strerror(errno))};
			return false;
		}
		// An agent that restarts appends a new log_started: each one sets the clock of the
		// lines after it.
		std::optional<double> base;
		std::string text;
		for (std::size_t line = 1; std::getline(in, text); ++line) {
			if (text.find_first_not_of(" \t\r") == std::string::npos)
				continue;
			nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
			if (!isEvent(j)) {
				if (!only) {
					++log.malformed;
					skip(file, line);
				}
				continue;
			}
			const double t = j["t"].get<double>();
			if (j["type"] == "log_started") {
				auto wall = j.find("wall");
				if (wall == j.end() || !wall->is_number()) {
					if (!only) {
						++log.malformed;
						skip(file, line);
					}
					continue;
				}
				base = wall->get<double>() - t;
				if (runs)
					runs->insert(std::llround(*base * 1000));
			}
			if (!base) {
				if (!only) {
					++log.unanchored;
					skip(file, line);
				}
				continue;
			}
			if (only && !only->contains(std::llround(*base * 1000)))
				continue;
			const double wall = *base + t;
			const std::string agent = j.value("agent", std::string());
			const long long seq = j.contains("seq") && j["seq"].is_number_integer()
						  ? j["seq"].get<long long>()
						  : -1;
			if (seq >= 0 && !seen.emplace(agent, seq, std::llround(wall * 1000)).second)
				continue;
			auto [run, added] = runIds.try_emplace({fileIndex, std::llround(*base * 1000)}, runIds.size());
			log.events.push_back({wall, 0, std::move(j), run->second});
		}
		return true;
	}
};

} // namespace

std::optional<EventLog> readEventLogs(const std::vector<std::string> &files, Failure &failure)
{
	EventLog log;
	// The same file given twice, or two copies of one log, would count every iteration twice.
	Reader reader{log, {}, {}, 0};
	for (const std::string &file : files) {
		Runs runs;
		++reader.fileIndex;
		if (!reader.read(file, failure, nullptr, &runs))
			return std::nullopt;
		// An agent's decisions.jsonl, beside its events.jsonl, holds its decisions past what junk may have
		// pushed out of the other file (which starts again at its size): those of the runs this file is from.
		const fs::path path(file);
		const fs::path decisions = path.parent_path() / kDecisionsFile;
		std::error_code ec;
		if (path.filename() == kEventsFile && fs::is_regular_file(decisions, ec) &&
		    std::find(files.begin(), files.end(), decisions.string()) == files.end()) {
			Failure ignored;
			reader.read(decisions.string(), ignored, &runs, nullptr);
		}
	}
	std::stable_sort(
	    log.events.begin(), log.events.end(),
	    [](const LoggedEvent &a, const LoggedEvent &b) { return a.wall < b.wall; });
	const double origin = log.events.empty() ? 0 : log.events.front().wall;
	for (LoggedEvent &e : log.events)
		e.time = e.wall - origin;
	return log;
}

void latestSession(EventLog &log)
{
	std::map<std::size_t, Run> runs;
	for (const LoggedEvent &e : log.events) {
		Run &r = runs[e.run];
		r.start = std::min(r.start, e.wall);
		r.end = std::max(r.end, e.wall);
	}
	if (runs.empty())
		return;
	// From the run that ended last back in time: a run that ends before the session's start (less
	// the gap) belongs to an earlier session.
	std::vector<Run> order;
	for (const auto &[id, r] : runs)
		order.push_back(r);
	std::sort(order.begin(), order.end(), [](const Run &a, const Run &b) { return a.end > b.end; });
	std::vector<double> starts = {order.front().start};
	for (std::size_t i = 1; i < order.size(); ++i) {
		if (order[i].end < starts.back() - kSessionGap)
			starts.push_back(order[i].start);
		else
			starts.back() = std::min(starts.back(), order[i].start);
	}
	// Sessions are told apart by their first start; a run starting before the latest session's
	// start but ending inside it is in it.
	log.sessions = starts.size();
	const double start = starts.front();
	std::erase_if(log.events, [&](const LoggedEvent &e) { return runs[e.run].end < start - kSessionGap; });
	log.sessionsLeftOut = starts.size() - 1;
	log.sessionStart = log.events.empty() ? start : log.events.front().wall;
	for (LoggedEvent &e : log.events)
		e.time = e.wall - log.sessionStart;
}

std::string sessionNote(const EventLog &log)
{
	if (log.sessionsLeftOut == 0)
		return {};
	using namespace std::chrono;
	const auto start = system_clock::time_point(duration_cast<system_clock::duration>(duration<double>(log.sessionStart)));
	return fmt::format("showing the latest session of the files, from {}; {} earlier session{} left out: "
			   "--all-sessions shows {}",
			   formatClock(start), log.sessionsLeftOut, log.sessionsLeftOut == 1 ? "" : "s",
			   log.sessionsLeftOut == 1 ? "it" : "them");
}

std::string skippedWarning(const EventLog &log)
{
	if (log.malformed == 0 && log.unanchored == 0)
		return {};
	std::string what;
	if (log.malformed)
		what = fmt::format("{} malformed line{}", log.malformed,
				   log.malformed == 1 ? "" : "s");
	if (log.unanchored)
		what += fmt::format(
		    "{}{} event{} before its file's log_started line (no wall clock)",
		    what.empty() ? "" : " and ", log.unanchored, log.unanchored == 1 ? "" : "s");
	std::string places;
	for (const std::string &w : log.where)
		places += (places.empty() ? "" : ", ") + w;
	const bool more = log.malformed + log.unanchored > log.where.size();
	return fmt::format("warning: skipped {} ({}{})", what, places, more ? ", ..." : "");
}

} // namespace malleo::cli
