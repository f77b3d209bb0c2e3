// SPDX-License-Identifier: Apache-2.0
#include "event_log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace malleo::cli {

namespace {

// Enough places for a person to find the bad lines; the count says how many there are.
constexpr std::size_t kPlacesNamed = 3;

bool isEvent(const nlohmann::json &j)
{
	if (!j.is_object())
		return false;
	auto type = j.find("type");
	auto t = j.find("t");
	return type != j.end() && type->is_string() && t != j.end() && t->is_number();
}

} // namespace

std::optional<EventLog> readEventLogs(const std::vector<std::string> &files, Failure &failure)
{
	EventLog log;
	auto skip = [&](const std::string &file, std::size_t line) {
		if (log.where.size() < kPlacesNamed)
			log.where.push_back(fmt::format("{}:{}", file, line));
	};
	// The same file given twice, or two copies of one log, would count every iteration twice.
	std::set<std::tuple<std::string, long long, long long>> seen;
	for (const std::string &file : files) {
		std::ifstream in(file);
		if (!in) {
			failure = {kExitBadInput,
				   fmt::format("cannot read {}: {}", file, std::strerror(errno))};
			return std::nullopt;
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
				++log.malformed;
				skip(file, line);
				continue;
			}
			const double t = j["t"].get<double>();
			if (j["type"] == "log_started") {
				auto wall = j.find("wall");
				if (wall == j.end() || !wall->is_number()) {
					++log.malformed;
					skip(file, line);
					continue;
				}
				base = wall->get<double>() - t;
			}
			if (!base) {
				++log.unanchored;
				skip(file, line);
				continue;
			}
			const double wall = *base + t;
			const std::string agent = j.value("agent", std::string());
			const long long seq = j.contains("seq") && j["seq"].is_number_integer()
						  ? j["seq"].get<long long>()
						  : -1;
			if (seq >= 0 && !seen.emplace(agent, seq, std::llround(wall * 1000)).second)
				continue;
			log.events.push_back({wall, 0, std::move(j)});
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
