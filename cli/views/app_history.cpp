// SPDX-License-Identifier: Apache-2.0
#include "app_history.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "reply_fields.h"

namespace malleo::cli {

namespace {

// Agents' clocks on one machine agree within milliseconds; their records of one outcome, within the
// time a message takes between them.
constexpr double kSameOutcome = 2.0;

std::optional<long long> integer(const nlohmann::json &j, const char *key)
{
	auto it = j.find(key);
	if (it == j.end() || !it->is_number())
		return std::nullopt;
	return static_cast<long long>(it->get<double>());
}

std::string str(const nlohmann::json &j, const char *key)
{
	auto it = j.find(key);
	return it != j.end() && it->is_string() ? shownText(it->get_ref<const std::string &>()) : std::string();
}

bool isReconfiguration(const nlohmann::json &e)
{
	return e["type"] == "reconf_result" || e["type"] == "command_result";
}

// "split 1 -> n3", "migrate 1 n2 -> n1", "merge 1 from n2".
std::string describeOperation(const nlohmann::json &e)
{
	const std::string op = str(e, "op").empty() ? "reconfiguration" : str(e, "op");
	std::string what = op;
	if (std::optional<long long> count = integer(e, "count"))
		what += fmt::format(" {}", *count);
	const std::string from = str(e, "from"), node = str(e, "node");
	// Where processes come from says something of a migration and a merge only: a split's new
	// processes come from nowhere.
	if (op == "merge" && !from.empty())
		what += " from " + from;
	if (op == "migrate" && !from.empty())
		what += " " + from;
	if (op != "merge" && !node.empty())
		what += " -> " + node;
	if (!e.value("ok", false))
		what += " failed";
	return what;
}

// Joins, leaves and drains, in the core's event names ("joined", "leaving", "draining", "drained",
// "drain_deadline"); peer_up and peer_down are left out: every agent says them of every other, which
// would bury the reconfigurations.
std::optional<std::string> describeNode(const nlohmann::json &e)
{
	const std::string type = str(e, "type"), agent = str(e, "agent");
	if (agent.empty())
		return std::nullopt;
	if (type == "joined")
		return "node " + agent + " joined";
	if (type == "leaving")
		return agent + " leaves";
	if (type == "draining" || type == "drain_started")
		return agent + " drains";
	if (type == "drained")
		return agent + " drained";
	if (type == "drain_deadline")
		return agent + "'s drain deadline passed";
	return std::nullopt;
}

std::string nodeWhy(const nlohmann::json &e)
{
	if (e["type"] == "joined" && !str(e, "via").empty())
		return "via " + str(e, "via");
	if (e["type"] == "drained" && e.contains("took") && e["took"].is_number())
		return fmt::format("took {:.1f} s", e["took"].get<double>());
	if (e["type"] == "draining" && e.contains("active") && e["active"].is_number())
		return fmt::format("{} active process{} to move", e["active"].get<double>(),
				   e["active"] == 1 ? "" : "es");
	return !str(e, "why").empty() ? str(e, "why") : str(e, "reason");
}

// The agents that only let another join: a seed that a newcomer greets records "joined via the
// newcomer" before the newcomer records "joined via the seed". Of two agents each joined via the
// other, the first to say it is the seed side.
std::set<const nlohmann::json *> seedSides(const EventLog &log)
{
	std::map<std::pair<std::string, std::string>, const LoggedEvent *> joins; // (agent, via)
	for (const LoggedEvent &e : log.events)
		if (e.event["type"] == "joined")
			joins.try_emplace({str(e.event, "agent"), str(e.event, "via")}, &e);
	std::set<const nlohmann::json *> seeds;
	for (const auto &[key, e] : joins) {
		auto other = joins.find({key.second, key.first});
		if (other != joins.end() && (e->wall < other->second->wall ||
					     (e->wall == other->second->wall && key.first < key.second)))
			seeds.insert(&e->event);
	}
	return seeds;
}

} // namespace

std::string chooseApp(const EventLog &log, const std::optional<std::string> &requested,
		      std::string &note, Failure &failure)
{
	// Per application: its app_progress events, then all its events.
	std::map<std::string, std::pair<std::size_t, std::size_t>> counts;
	for (const LoggedEvent &e : log.events) {
		const std::string app = str(e.event, "app");
		if (app.empty() ||
		    (e.event["type"] != "app_progress" && !isReconfiguration(e.event)))
			continue;
		auto &[progress, all] = counts[app];
		progress += e.event["type"] == "app_progress";
		++all;
	}
	std::string names;
	for (const auto &[app, count] : counts)
		names += (names.empty() ? "" : ", ") + app;
	if (requested) {
		if (!counts.count(*requested))
			failure = {kExitBadInput,
				   fmt::format("--app {}: no event of it in the files ({})",
					       *requested,
					       names.empty() ? "they name no application"
							     : "applications: " + names)};
		return counts.count(*requested) ? *requested : std::string();
	}
	if (counts.empty())
		return {};
	auto best =
	    std::max_element(counts.begin(), counts.end(),
			     [](const auto &a, const auto &b) { return a.second < b.second; });
	if (counts.size() > 1)
		note = fmt::format(
		    "{} applications in the files ({}); showing {}, the one with the most progress "
		    "reports ({}); choose with --app",
		    counts.size(), names, best->first, best->second.first);
	return best->first;
}

AppHistory appHistory(const EventLog &log, const std::string &app)
{
	AppHistory history;
	history.app = app;
	long long counted = 0;
	// An agent hosting rank 0 and the others it involves may each record one result: one row is
	// enough. The same outcome much later is another attempt.
	std::map<std::tuple<std::string, long long, long long, long long, long long, bool>, double>
	    seen;
	const std::set<const nlohmann::json *> seeds = seedSides(log);
	for (const LoggedEvent &logged : log.events) {
		const nlohmann::json &e = logged.event;
		const bool ours = !app.empty() && str(e, "app") == app;
		if (ours && e["type"] == "app_progress") {
			const std::optional<double> seconds = number(e, {"seconds"});
			counted += std::max(0LL, integer(e, "iterations").value_or(0));
			if (seconds && *seconds > 0)
				history.progress.push_back(
				    {logged.time, 1.0 / *seconds,
				     static_cast<long>(integer(e, "size").value_or(0)), counted});
			continue;
		}
		HistoryEvent row;
		row.time = logged.time;
		row.event = &e;
		if (ours && isReconfiguration(e)) {
			row.reconfiguration = true;
			row.ok = e.value("ok", false);
			row.what = describeOperation(e);
			// A failure's own words say what went wrong; who asked ("asked by a person") does
			// not.
			const std::string why = str(e, "why"), text = str(e, "text");
			if (row.ok || text.empty())
				row.why = why.empty() ? text : why;
			else
				row.why = why.empty() ? text : fmt::format("{} (wanted: {})", text, why);
			row.iteration = integer(e, "iteration");
			row.before = integer(e, "before");
			row.after = integer(e, "after");
			auto [at, added] =
			    seen.try_emplace({str(e, "op"), integer(e, "count").value_or(-1),
					      row.iteration.value_or(-1), row.before.value_or(-1),
					      row.after.value_or(-1), row.ok},
					     logged.time);
			if (!added && logged.time - at->second < kSameOutcome)
				continue;
			at->second = logged.time;
		} else if (seeds.contains(&e)) {
			continue;
		} else if (std::optional<std::string> what = describeNode(e)) {
			row.what = *what;
			row.why = nodeWhy(e);
		} else {
			continue;
		}
		history.events.push_back(std::move(row));
	}
	return history;
}

const ProgressPoint *progressAt(const AppHistory &history, double time)
{
	auto after = std::upper_bound(history.progress.begin(), history.progress.end(), time,
				      [](double t, const ProgressPoint &p) { return t < p.time; });
	return after == history.progress.begin() ? nullptr : &*(after - 1);
}

} // namespace malleo::cli
