// SPDX-License-Identifier: Apache-2.0
#include "action_commands.h"

#include <optional>

#include <fmt/format.h>

#include <malleo/message.h>

namespace malleo {

namespace {

std::optional<int64_t> integer(const nlohmann::json &params, const char *key)
{
	const auto it = params.find(key);
	if (it == params.end() || !it->is_number_integer())
		return std::nullopt;
	return it->get<int64_t>();
}

std::string text(const nlohmann::json &params, const char *key)
{
	const auto it = params.find(key);
	return it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A count a module gave, or why it gives none.
std::variant<Command, NoCommand> counted(Command command, std::optional<int64_t> count,
						const std::string &kind)
{
	if (!count)
		return NoCommand{kind + ": the action names no process count"};
	if (*count < 1)
		return NoCommand{fmt::format("{}: {} processes is nothing to do", kind, *count)};
	command.count = *count;
	return command;
}

} // namespace

std::variant<Command, NoCommand> commandForAction(const Action &action, const std::string &self,
							 const ApplicationInfo *app)
{
	const nlohmann::json &p = action.params.is_object() ? action.params : nlohmann::json::object();
	const std::string &kind = action.kind;
	if (action.app.empty())
		return NoCommand{kind + ": a node-level action, no application to command"};
	Command c;
	if (kind == "split") {
		// ios: split into n, of which r go to the requesting node (the transfer that follows is this split's).
		c.op = Operation::Split;
		c.node = text(p, "target");
		std::optional<int64_t> count = integer(p, "count");
		if (!count)
			count = integer(p, "r");
		return counted(std::move(c), count, kind);
	}
	if (kind == "transfer" || kind == "migrate") {
		if (p.value("after_split", false))
			return NoCommand{kind + ": carried out by the split before it, which places its new processes"};
		c.op = Operation::Migrate;
		c.node = text(p, "target");
		if (c.node.empty())
			c.node = text(p, "node");
		c.from = text(p, "from_node");
		if (c.from.empty())
			c.from = self;
		if (c.from == c.node)
			return NoCommand{fmt::format("{}: processes of node '{}' would move to it", kind, c.node)};
		std::optional<int64_t> count = integer(p, "count");
		if (!count)
			count = integer(p, "processes");
		return counted(std::move(c), count, kind);
	}
	if (kind == "merge") {
		// ios: the co-located processes of this node fold from `from` into `into`.
		c.op = Operation::Merge;
		c.from = text(p, "from_node");
		if (c.from.empty())
			c.from = self;
		std::optional<int64_t> count = integer(p, "count");
		const std::optional<int64_t> from = integer(p, "from"), into = integer(p, "into");
		if (!count && from && into)
			count = *from - *into;
		return counted(std::move(c), count, kind);
	}
	if (kind == "swap") {
		// A process of the slow node gives its place to a parked one of the fast node: a migration of one.
		c.op = Operation::Migrate;
		c.node = text(p, "activate_agent");
		c.from = text(p, "deactivate_agent");
		if (c.node.empty())
			return NoCommand{"swap: the action names no node to activate a process on"};
		if (c.from.empty())
			c.from = self;
		return counted(std::move(c), 1, kind);
	}
	if (kind == "grow" || kind == "shrink") {
		const std::optional<int64_t> size = integer(p, "size");
		std::optional<int64_t> current = integer(p, "from");
		if (!current && app)
			current = app->totalProcesses;
		if (!size || !current)
			return NoCommand{kind + ": the action names no size to reach or the current size is unknown"};
		c.op = kind == "grow" ? Operation::Split : Operation::Merge;
		if (kind == "grow")
			c.node = text(p, "node"); // sweetspot: the idlest node it knows; empty: the bridge's choice
		return counted(std::move(c), kind == "grow" ? *size - *current : *current - *size, kind);
	}
	return NoCommand{fmt::format("'{}' is not a kind malleo carries out (shown, not executed)", kind)};
}

} // namespace malleo
