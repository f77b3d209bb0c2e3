// SPDX-License-Identifier: Apache-2.0
#include "event_words.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "human_units.h"
#include "reply_fields.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

// Agents on one machine tell one outcome within the time a message takes between them.
constexpr auto kSameOutcome = std::chrono::seconds(2);
// More agents than this are counted, not listed: the row is about what happened.
constexpr std::size_t kNodesListed = 3;
constexpr std::size_t kNodesWidth = 8;
constexpr std::size_t kValueWidth = 60;
// Fields every event has, shown elsewhere in the row or not at all.
constexpr std::array kEnvelope = {"type", "seq", "t", "agent"};

// A field as text (numbers rounded, text inert on a terminal), empty when absent.
std::string f(const nlohmann::json &e, const char *key)
{
	auto it = e.find(key);
	if (it == e.end() || it->is_null())
		return {};
	if (it->is_number_float())
		return roundedNumber(it->get<double>());
	return clip(scalarText(*it), kValueWidth);
}

// " (text)" when there is text, else nothing.
std::string paren(const std::string &text)
{
	return text.empty() ? std::string() : " (" + text + ")";
}

std::string why(const nlohmann::json &e)
{
	std::string w = f(e, "why");
	if (w.empty())
		if (const nlohmann::json *r = field(e, {"reasons", "why"}); r && r->is_string())
			w = clip(shownText(r->get_ref<const std::string &>()), kValueWidth);
	return w;
}

// "n2's work request 6".
std::string request(const nlohmann::json &e)
{
	std::string origin = f(e, "origin");
	return fmt::format("{}work request {}", origin.empty() ? "" : origin + "'s ", f(e, "wrm_id"));
}

// The event's other fields as key=value, for a type without words of its own.
std::string pairs(const nlohmann::json &e)
{
	std::string out;
	for (auto it = e.begin(); it != e.end(); ++it) {
		if (std::find(kEnvelope.begin(), kEnvelope.end(), std::string_view(it.key())) != kEnvelope.end())
			continue;
		std::string v = f(e, it.key().c_str());
		if (!v.empty())
			out += fmt::format(" {}={}", it.key(), v);
	}
	return out;
}

std::string command(const nlohmann::json &e, const char *what)
{
	return fmt::format("{}: command {} ({}) {}", f(e, "app"), f(e, "command"), f(e, "op"), what);
}

} // namespace

std::string roundedNumber(double value)
{
	if (!std::isfinite(value))
		return fmt::format("{}", value);
	if (std::fabs(value) >= 1000 && std::fabs(value) < 1e6) {
		const double unit = std::pow(10, std::floor(std::log10(std::fabs(value))) - 2);
		return fmt::format("{:.0f}", std::round(value / unit) * unit);
	}
	return fmt::format("{:.3g}", value);
}

namespace {

// The overlay's events: an agent, its peers, what it rejected.
std::optional<std::string> overlayWords(const std::string &type, const nlohmann::json &e)
{
	if (type == "started")
		return "agent started";
	if (type == "log_started")
		return "event log started";
	if (type == "joined")
		return f(e, "via").empty() ? "joined the overlay" : "joined the overlay via " + f(e, "via");
	if (type == "peer_up")
		return "sees peer " + f(e, "peer");
	if (type == "peer_down")
		return fmt::format("lost peer {}{}", f(e, "peer"), paren(f(e, "why")));
	if (type == "leaving")
		return "leaves the overlay";
	if (type == "rejected")
		return fmt::format("rejected a {} message: {}{}", f(e, "channel"), f(e, "reason"), paren(f(e, "detail")));
	if (type == "rejected_unwritten")
		return fmt::format("rejected {} more {} messages ({})", f(e, "count"), f(e, "channel"), f(e, "reason"));
	if (type == "peer_error")
		return fmt::format("peer {} reports an error: {}{}", f(e, "peer"), f(e, "code"), paren(f(e, "text")));
	return std::nullopt;
}

// Work stealing's events: work requests asked, passed on, answered or lost.
std::optional<std::string> workRequestWords(const std::string &type, const nlohmann::json &e)
{
	if (type == "wrm_sent")
		return fmt::format("asks {} for work{}, attempt {}", f(e, "to"),
				   paren(fmt::format("{}, APW {}", f(e, "why"), f(e, "apw"))), f(e, "attempt"));
	if (type == "wrm_forwarded")
		return fmt::format("passes {} on (no work to give)", request(e));
	if (type == "wrm_answered")
		return fmt::format("says yes to {}{}", request(e), paren(why(e)));
	if (type == "wrm_expired")
		return fmt::format("{}: TTL ran out here, no one gave work", request(e));
	if (type == "wrm_dead_end")
		return fmt::format("{}: no peer left to pass it to", request(e));
	if (type == "wrm_unanswered")
		return fmt::format("no answer to its work request {}, asks again in {} s", f(e, "wrm_id"),
				   f(e, "retry_in"));
	if (type == "wrm_reply")
		return fmt::format("{} answers its work request {} after {} s", f(e, "responder"), f(e, "wrm_id"),
				   f(e, "rtt"));
	return std::nullopt;
}

// Decisions, commands and their results, applications and drains.
std::optional<std::string> reconfigurationWords(const std::string &type, const nlohmann::json &e)
{
	if (type == "action")
		return fmt::format("decides {} of {} on {}{}", f(e, "kind"), f(e, "app"), f(e, "trigger"), paren(why(e)));
	if (type == "action_skipped")
		return fmt::format("does not {} {}{}", f(e, "kind"), f(e, "app"), paren(why(e)));
	if (type == "reconf_request")
		return fmt::format("asks {} to {} {}{}", f(e, "root"), f(e, "kind"), f(e, "app"), paren(why(e)));
	if (type == "reconf_result") {
		std::string text = !f(e, "text").empty() ? f(e, "text") : why(e);
		return fmt::format("{}: {} {}{}", f(e, "app"), f(e, "op"), e.value("ok", false) ? "done" : "failed",
				   paren(text));
	}
	if (type == "reconf_timeout")
		return fmt::format("{}: no result from {} after {} s", f(e, "app"), f(e, "root"), f(e, "waited"));
	if (type == "app_registered")
		return fmt::format("application {} registered", f(e, "app"));
	if (type == "app_gone")
		return fmt::format("application {} gone", f(e, "app"));
	if (type == "process_gone")
		return fmt::format("{}: rank {} (pid {}) gone without a word", f(e, "app"), f(e, "rank"), f(e, "pid"));
	if (type == "app_progress") {
		std::optional<double> seconds = number(e, {"seconds"});
		return fmt::format("{}: {} it/s on {} processes", f(e, "app"),
				   seconds && *seconds > 0 ? roundedNumber(1 / *seconds) : "-", f(e, "size"));
	}
	if (type == "command_queued")
		return command(e, "queued");
	if (type == "command_sent")
		return command(e, "sent");
	if (type == "command_result")
		return command(e, e.value("ok", false) ? "done" : "failed");
	if (type == "command_dropped" || type == "command_lost")
		return command(e, type == "command_lost" ? "lost" : "dropped") + paren(why(e));
	if (type == "command_recovered")
		return command(e, "awaited after a restart");
	if (type == "draining")
		return fmt::format("drains: {} active processes to move within {} s", f(e, "active"), f(e, "deadline"));
	if (type == "drained")
		return fmt::format("drained in {} s", f(e, "took"));
	if (type == "drain_deadline")
		return fmt::format("drain deadline passed, {} processes still here", f(e, "active"));
	return std::nullopt;
}

} // namespace

std::string eventWords(const nlohmann::json &e)
{
	if (!e.is_object())
		return "unreadable event";
	const std::string type = text(e, {"type"});
	for (auto words : {overlayWords, workRequestWords, reconfigurationWords})
		if (std::optional<std::string> w = words(type, e))
			return *w;
	return type + pairs(e);
}

void foldEvent(std::vector<EventRow> &rows, std::chrono::system_clock::time_point at, const std::string &agent,
	       const std::string &words)
{
	for (auto row = rows.rbegin(); row != rows.rend(); ++row) {
		if (row->words != words || row->at > at + kSameOutcome || row->at < at - kSameOutcome)
			continue;
		if (std::find(row->nodes.begin(), row->nodes.end(), agent) != row->nodes.end())
			continue; // the same agent again: another outcome
		row->nodes.push_back(agent);
		row->at = std::min(row->at, at);
		return;
	}
	rows.push_back({at, {agent}, words});
}

std::string eventRowLine(const EventRow &row)
{
	std::string nodes;
	if (row.nodes.size() > kNodesListed)
		nodes = fmt::format("{} nodes", row.nodes.size());
	else
		for (const std::string &n : row.nodes)
			nodes += (nodes.empty() ? "" : ",") + n;
	return fmt::format("{}  {:<{}}  {}", formatClock(row.at), shownText(nodes), kNodesWidth, row.words);
}

} // namespace malleo::cli
