// SPDX-License-Identifier: Apache-2.0
#include "command.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace malleo::pcm {

const char *operationName(Operation op)
{
	switch (op) {
	case Operation::split:
		return "split";
	case Operation::merge:
		return "merge";
	case Operation::migrate:
		return "migrate";
	case Operation::none:
		break;
	}
	return "none";
}

namespace {

// Whole-string decimal parse: "12x", "" and overflow are errors, so a typo never becomes a different schedule.
bool parseInteger(const std::string &text, long long min, long long &value)
{
	if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
		return false;
	errno = 0;
	char *end = nullptr;
	value = std::strtoll(text.c_str(), &end, 10);
	return errno == 0 && *end == '\0' && value >= min && value <= 1000000000000LL;
}

std::string parseEntry(const std::string &entry, Command &command)
{
	const auto at = entry.find('@');
	if (at == std::string::npos)
		return "'" + entry + "' has no '@' (expected operation@iteration[:argument])";
	const std::string name = entry.substr(0, at);
	std::string rest = entry.substr(at + 1);
	std::string argument;
	const auto colon = rest.find(':');
	const bool hasArgument = colon != std::string::npos;
	if (hasArgument) {
		argument = rest.substr(colon + 1);
		rest = rest.substr(0, colon);
	}

	if (name == "split")
		command.op = Operation::split;
	else if (name == "merge")
		command.op = Operation::merge;
	else if (name == "migrate")
		command.op = Operation::migrate;
	else
		return "'" + entry + "': unknown operation '" + name + "' (split, merge or migrate)";

	long long value = 0;
	if (!parseInteger(rest, 0, value))
		return "'" + entry + "': iteration '" + rest + "' is not a non-negative integer";
	command.iteration = value;

	if (!hasArgument)
		return {};
	std::string count = argument;
	if (command.op == Operation::migrate) {
		const auto slash = argument.find('/');
		if (slash != std::string::npos) {
			command.node = argument.substr(slash + 1);
			count = argument.substr(0, slash);
			if (command.node.empty())
				return "'" + entry + "': empty node name after '/'";
		}
	}
	if (!parseInteger(count, 1, value) || value > 1000000)
		return "'" + entry + "': count '" + count + "' is not a positive integer";
	command.count = static_cast<int>(value);
	return {};
}

} // namespace

std::string parseForcedSchedule(const std::string &text, std::vector<Command> &out)
{
	std::vector<Command> commands;
	std::size_t start = 0;
	while (start <= text.size()) {
		auto end = text.find(',', start);
		if (end == std::string::npos)
			end = text.size();
		const std::string entry = text.substr(start, end - start);
		if (entry.empty()) {
			if (text.empty())
				break;
			return "MALLEO_FORCE: empty entry in '" + text + "'";
		}
		Command command;
		if (auto error = parseEntry(entry, command); !error.empty())
			return "MALLEO_FORCE: " + error;
		commands.push_back(command);
		start = end + 1;
	}
	std::stable_sort(commands.begin(), commands.end(),
			 [](const Command &a, const Command &b) { return a.iteration < b.iteration; });
	for (std::size_t i = 1; i < commands.size(); ++i)
		if (commands[i].iteration == commands[i - 1].iteration)
			return "MALLEO_FORCE: two operations at iteration " +
			       std::to_string(commands[i].iteration) + " (one per probe)";
	out = std::move(commands);
	return {};
}

} // namespace malleo::pcm
