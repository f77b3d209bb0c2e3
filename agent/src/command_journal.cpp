// SPDX-License-Identifier: Apache-2.0
// An agent killed while it holds an application's command must not lose it without a word. The daemon keeps the
// command slots in the run directory (commands.json) and hands them to the next agent started there: a command still
// queued never ran and is reported lost; one the coordinator had taken may still finish, so its result is awaited, and
// the command numbers go on from where they were, so that result cannot be taken for a newer command's.
#include "core.h"

#include <algorithm>

#include <fmt/format.h>

#include "action_commands.h"

namespace malleo {

namespace {

constexpr int kJournalVersion = 1;
// How long a result of a command in flight at the restart is awaited when the application never polls again (it
// ended, or its coordinator is gone): the application's next poll settles it sooner.
constexpr double kRecoveredResultWait = 60.0;

} // namespace

nlohmann::json Core::commandJournal() const
{
	nlohmann::json commands = nlohmann::json::object();
	for (const auto &[appId, c] : commands_) {
		nlohmann::json entry = commandFields(c.command);
		entry.update({{"command", c.id}, {"sent", c.sent}, {"origin", c.asker.origin},
			      {"request", c.asker.request}, {"trigger", c.asker.trigger}, {"kind", c.asker.kind},
			      {"why", c.asker.why}, {"decision", c.asker.decision}});
		// The coordinator it was handed to, whose result a successor takes (from any of that node's connections).
		if (c.sent && c.sentToKnown)
			entry["sent_to"] = {{"local", c.sentTo.local}, {"node", c.sentTo.node}};
		commands[appId] = std::move(entry);
	}
	return {{"version", kJournalVersion}, {"next_command", nextCommandId_}, {"commands", std::move(commands)}};
}

std::string Core::recoverCommands(const nlohmann::json &journal, double now, CoreOutputs &out)
{
	if (!journal.is_object())
		return fmt::format("not a version {} command journal", kJournalVersion);
	const auto version = journal.find("version");
	const auto next = journal.find("next_command");
	const auto commands = journal.find("commands");
	if (version == journal.end() || *version != kJournalVersion || next == journal.end() ||
	    !next->is_number_unsigned() || commands == journal.end() || !commands->is_object())
		return fmt::format("not a version {} command journal", kJournalVersion);
	nextCommandId_ = std::max(nextCommandId_, next->get<uint64_t>());
	std::string problem;
	for (const auto &[appId, entry] : commands->items()) {
		const auto text = [&](const char *key) {
			const auto it = entry.find(key);
			return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
		};
		const auto id = entry.is_object() ? entry.find("command") : entry.end();
		const auto sent = entry.is_object() ? entry.find("sent") : entry.end();
		const auto request = entry.is_object() ? entry.find("request") : entry.end();
		AppCommand c;
		if (id == entry.end() || !id->is_number_unsigned() || sent == entry.end() || !sent->is_boolean() ||
		    request == entry.end() || !request->is_number_unsigned() || readCommand(entry, c.command)) {
			problem = fmt::format("the command of '{}' is unreadable; skipped", appId.substr(0, 64));
			continue;
		}
		c.id = id->get<uint64_t>();
		c.asker = {text("origin"), request->get<uint64_t>(), text("trigger"), text("kind"), text("why"),
			   text("decision")};
		c.sent = sent->get<bool>();
		if (const auto to = entry.find("sent_to"); to != entry.end() && to->is_object() &&
		    to->value("local", nlohmann::json()).is_boolean() && to->value("node", nlohmann::json()).is_string()) {
			c.sentTo = {(*to)["local"].get<bool>(), (*to)["node"].get<std::string>(), ""};
			c.sentToKnown = true;
		}
		c.queuedAt = c.sentAt = now;
		c.recoveredUntil = now + kRecoveredResultWait;
		nextCommandId_ = std::max(nextCommandId_, c.id + 1);
		commands_[appId] = std::move(c);
		++commandChanges_;
		if (!commands_[appId].sent)
			dropCommand(appId, "lost", "the agent restarted while it was queued: it never ran", now, out);
		else
			emit({{"type", "command_recovered"}, {"app", appId}, {"command", commands_[appId].id},
			      {"op", operationName(commands_[appId].command.op)},
			      {"why", "in flight when the agent restarted: the application's result is awaited"}},
			     now, out);
	}
	return problem;
}

// A command in flight at the restart whose result did not come: the coordinator polls again only after it has sent
// the result of what it took, so a poll (or the wait's end) means that result is lost.
void Core::settleRecovered(const std::string &appId, bool polled, double now, CoreOutputs &out)
{
	auto c = commands_.find(appId);
	if (c == commands_.end() || c->second.recoveredUntil == 0.0 || (!polled && now < c->second.recoveredUntil))
		return;
	dropCommand(appId, "lost",
		    polled ? "in flight when the agent restarted, and the application's result never came"
			   : fmt::format("in flight when the agent restarted, and no result within {:.0f} s",
					 kRecoveredResultWait),
		    now, out);
}

} // namespace malleo
