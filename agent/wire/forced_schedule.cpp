// SPDX-License-Identifier: Apache-2.0
// MALLEO_FORCE's grammar (docs/pcm-api.md): the bridge reads its schedule from it, `malleo run` refuses a malformed
// one before launching. A command's bounds are the wire format's, whichever way it comes (kCommandCountMax,
// kCommandWeightMax).
#include <malleo/command.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <utility>

namespace malleo {

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

std::string parseEntry(const std::string &entry, std::int64_t &iteration, Command &command)
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

	if (!operationFromName(name, command.op))
		return "'" + entry + "': unknown operation '" + name + "' (split, merge or migrate)";

	long long value = 0;
	if (!parseInteger(rest, 0, value))
		return "'" + entry + "': iteration '" + rest + "' is not a non-negative integer";
	iteration = value;

	if (!hasArgument)
		return {};
	// count, then "/node" and "/w=weights" in either order.
	std::vector<std::string> parts;
	for (std::size_t start = 0;;) {
		const auto slash = argument.find('/', start);
		parts.push_back(argument.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
		if (slash == std::string::npos)
			break;
		start = slash + 1;
	}
	const std::string &count = parts.front();
	if (!parseInteger(count, 1, value) || value > kCommandCountMax)
		return "'" + entry + "': count '" + count + "' is not a positive integer";
	command.count = value;
	for (std::size_t i = 1; i < parts.size(); ++i) {
		const std::string &part = parts[i];
		if (part.rfind("w=", 0) == 0) {
			if (!command.weights.empty())
				return "'" + entry + "': two weight lists";
			for (std::size_t start = 2;;) {
				const auto comma = part.find(',', start);
				const std::string weight =
					part.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
				if (!parseInteger(weight, 1, value) || value > kCommandWeightMax)
					return "'" + entry + "': weight '" + weight + "' is not a positive integer";
				command.weights.push_back(value);
				if (comma == std::string::npos)
					break;
				start = comma + 1;
			}
		} else if (command.op == Operation::Merge) {
			return "'" + entry + "': a merge takes no node";
		} else if (part.empty()) {
			return "'" + entry + "': empty node name after '/'";
		} else if (!command.node.empty()) {
			return "'" + entry + "': two nodes";
		} else {
			command.node = part;
		}
	}
	return {};
}

} // namespace

std::string parseForcedSchedule(const std::string &text, std::map<std::int64_t, Command> &out)
{
	std::vector<std::string> entries;
	std::size_t start = 0;
	while (start <= text.size()) {
		auto end = text.find(',', start);
		if (end == std::string::npos)
			end = text.size();
		std::string entry = text.substr(start, end - start);
		// An entry starts with an operation name, so a piece starting with a digit continues the weight list
		// of the entry before it ("split@3:2/w=1,1,3").
		if (!entry.empty() && std::isdigit(static_cast<unsigned char>(entry[0])) && !entries.empty() &&
		    entries.back().find("/w=") != std::string::npos &&
		    std::isdigit(static_cast<unsigned char>(entries.back().back())))
			entries.back() += "," + entry;
		else if (entry.empty() && !text.empty())
			return "MALLEO_FORCE: empty entry in '" + text + "'";
		else if (!entry.empty())
			entries.push_back(entry);
		start = end + 1;
	}
	std::vector<std::pair<std::int64_t, Command>> parsed;
	for (const auto &entry : entries) {
		std::pair<std::int64_t, Command> command;
		if (auto error = parseEntry(entry, command.first, command.second); !error.empty())
			return "MALLEO_FORCE: " + error;
		parsed.push_back(std::move(command));
	}
	std::map<std::int64_t, Command> commands;
	std::optional<std::int64_t> twice; // the first in iteration order, whatever the order of the entries
	for (auto &[iteration, command] : parsed)
		if (!commands.emplace(iteration, std::move(command)).second && (!twice || iteration < *twice))
			twice = iteration;
	if (twice)
		return "MALLEO_FORCE: two operations at iteration " + std::to_string(*twice) + " (one per probe)";
	out = std::move(commands);
	return {};
}

} // namespace malleo
