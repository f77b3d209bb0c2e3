// SPDX-License-Identifier: Apache-2.0
// A command's fields, written and read in one place (<malleo/command.h>); the rules they follow are
// command_check.cpp's.
#include <malleo/command.h>

#include <fmt/format.h>

namespace malleo {

const char *operationName(Operation op)
{
	switch (op) {
	case Operation::Split:
		return "split";
	case Operation::Merge:
		return "merge";
	case Operation::Migrate:
		return "migrate";
	case Operation::None:
		break;
	}
	return "none";
}

bool operationFromName(std::string_view name, Operation &op)
{
	for (Operation candidate : {Operation::Split, Operation::Merge, Operation::Migrate})
		if (name == operationName(candidate)) {
			op = candidate;
			return true;
		}
	return false;
}

Message commandFields(const Command &command)
{
	Message fields = {{"op", operationName(command.op)}, {"count", command.count}};
	if (!command.node.empty())
		fields["node"] = command.node;
	if (!command.from.empty())
		fields["from_node"] = command.from;
	if (!command.weights.empty())
		fields["weights"] = command.weights;
	if (!command.nodeWeights.empty())
		fields["node_weights"] = command.nodeWeights;
	return fields;
}

std::optional<std::string> readCommand(const Message &fields, Command &out)
{
	if (std::optional<std::string> problem = checkCommand(fields))
		return problem;
	Command c;
	operationFromName(fields["op"].get_ref<const std::string &>(), c.op);
	c.count = fields["count"].get<std::int64_t>();
	c.node = fields.value("node", std::string());
	c.from = fields.value("from_node", std::string());
	if (const auto w = fields.find("weights"); w != fields.end())
		c.weights = w->get<std::vector<std::int64_t>>();
	if (const auto w = fields.find("node_weights"); w != fields.end())
		c.nodeWeights = w->get<std::map<std::string, std::int64_t>>();
	out = std::move(c);
	return std::nullopt;
}

// The agent's replies are not in its schema's table, which lists what it takes: a reply is checked by the rules the
// agent checks `force` by, and one that does not fit is no command at all.
bool commandFromReply(const Message &reply, Command &command, std::uint64_t &id, std::string &problem)
{
	const auto op = reply.is_object() ? reply.find("op") : reply.end();
	if (op == reply.end() || !op->is_string()) {
		problem = "a command without an op";
		return false;
	}
	if (*op == "none")
		return false;
	Command read;
	if (std::optional<std::string> bad = readCommand(reply, read)) {
		problem = "a command that cannot be carried out (" + *bad + ")";
		return false;
	}
	const auto commandId = reply.find("command");
	if (commandId == reply.end() || !commandId->is_number_unsigned() || commandId->get<std::uint64_t>() == 0) {
		problem = "a command without a valid id";
		return false;
	}
	command = std::move(read);
	id = commandId->get<std::uint64_t>();
	return true;
}

std::string describeCommand(const Command &c)
{
	const char *op = operationName(c.op);
	if (c.op == Operation::Merge)
		return c.from.empty() ? fmt::format("merge {}", c.count) : fmt::format("merge {} on {}", c.count, c.from);
	if (c.op == Operation::Migrate)
		return fmt::format("migrate {} {} -> {}", c.count, c.from.empty() ? "any" : c.from,
				   c.node.empty() ? "any" : c.node);
	return c.node.empty() ? fmt::format("{} {}", op, c.count) : fmt::format("{} {} -> {}", op, c.count, c.node);
}

} // namespace malleo
