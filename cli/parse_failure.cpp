// SPDX-License-Identifier: Apache-2.0
#include "parse_failure.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "command_guide.h"

namespace malleo::cli {

namespace {

// WORD as a number, if all of it is one (and whole, when asked).
std::optional<double> numberIn(const std::string &word, bool whole)
{
	if (word.empty())
		return std::nullopt;
	char *end = nullptr;
	const double value = std::strtod(word.c_str(), &end);
	if (*end != '\0' || !std::isfinite(value) || (whole && value != std::floor(value)))
		return std::nullopt;
	return value;
}

std::string kind(bool whole)
{
	return whole ? "a whole number" : "a number";
}

// The subcommands being parsed, from APP down to the deepest one: where the failure is.
std::vector<CLI::App *> parsedPath(CLI::App &app)
{
	std::vector<CLI::App *> path = {&app};
	for (bool deeper = true; deeper;) {
		deeper = false;
		for (CLI::App *sub : path.back()->get_subcommands())
			if (sub->parsed()) {
				path.push_back(sub);
				deeper = true;
				break;
			}
	}
	return path;
}

// "malleo cluster up"
std::string spoken(const std::vector<CLI::App *> &path)
{
	std::string words = "malleo";
	for (std::size_t i = 1; i < path.size(); ++i)
		words += " " + path[i]->get_name();
	return words;
}

// How a person names an option or a positional argument: `-n N`, `--output FILE`, `APP`.
std::string shownName(const CLI::Option *opt)
{
	if (opt->get_positional())
		return opt->get_type_name();
	const std::string name = opt->get_name(false, false);
	return opt->get_expected_max() > 0 ? name + " " + opt->get_type_name() : name;
}

// The first clause of an option's description: enough to say what it is.
std::string gist(const CLI::Option *opt)
{
	const std::string &text = opt->get_description();
	return text.substr(0, text.find(';'));
}

std::string missing(const std::vector<CLI::App *> &path, const CLI::ParseError &error)
{
	CLI::App *here = path.back();
	std::vector<std::string> usage; // what the command needs: its required options, then its positionals
	std::vector<std::string> positionals;
	const CLI::Option *absent = nullptr;
	for (const CLI::Option *opt : here->get_options()) {
		const std::string name = shownName(opt);
		if (opt->get_positional())
			positionals.push_back(opt->get_expected_max() > 1 && !name.ends_with("]") ? name + "..." : name);
		else if (opt->get_required())
			usage.push_back(name);
		if (!absent && opt->get_required() && opt->count() == 0)
			absent = opt;
	}
	if (!absent)
		return fmt::format("{} (see {} --help)", error.what(), spoken(path));
	usage.insert(usage.end(), positionals.begin(), positionals.end());
	return fmt::format("missing {}, {} (usage: {} {}; see {} --help)", shownName(absent), gist(absent),
			   spoken(path), fmt::join(usage, " "), spoken(path));
}

std::string unexpected(const std::vector<CLI::App *> &path)
{
	std::vector<std::string> extras;
	for (CLI::App *app : path)
		for (const std::string &word : app->remaining(false))
			extras.push_back(word);
	const std::string where = spoken(path);
	for (const std::string &word : extras) {
		if (!word.starts_with("-") || word == "-")
			continue;
		// The command's own options first: on a tie they are the likelier (`cluster up --nods`: --nodes, not the
		// global --node).
		std::vector<std::string> names;
		for (auto app = path.rbegin(); app != path.rend(); ++app)
			for (const CLI::Option *opt : (*app)->get_options()) {
				for (const std::string &l : opt->get_lnames())
					names.push_back("--" + l);
				for (const std::string &s : opt->get_snames())
					names.push_back("-" + s);
			}
		names.push_back("--help");
		const std::string name = word.substr(0, word.find('='));
		if (std::optional<std::string> near = nearestWord(name, names))
			return fmt::format("unknown option '{}' of {}; did you mean '{}'? (see {} --help)", name, where,
					   *near, where);
		return fmt::format("unknown option '{}' of {} (see {} --help)", name, where, where);
	}
	return fmt::format("unexpected argument{} '{}' for {} (see {} --help)", extras.size() > 1 ? "s" : "",
			   fmt::join(extras, " "), where, where);
}

} // namespace

CLI::Validator aboveZero(bool whole)
{
	return CLI::Validator(
		[whole](std::string &input) -> std::string {
			std::optional<double> value = numberIn(input, whole);
			if (!value)
				return fmt::format("must be {} above 0 (got {})", kind(whole), input);
			if (*value <= 0)
				return fmt::format("must be above 0 (got {})", input);
			return {};
		},
		""); // nothing after the type in --help, nor in a usage line
}

CLI::Validator between(double low, double high, bool whole)
{
	return CLI::Validator(
		[=](std::string &input) -> std::string {
			std::optional<double> value = numberIn(input, whole);
			if (!value)
				return fmt::format("must be {} from {} to {} (got {})", kind(whole), low, high, input);
			if (*value < low || *value > high)
				return fmt::format("must be from {} to {} (got {})", low, high, input);
			return {};
		},
		fmt::format("{} to {}", low, high));
}

std::string parseFailureLine(CLI::App &app, const CLI::ParseError &error)
{
	const std::vector<CLI::App *> path = parsedPath(app);
	if (dynamic_cast<const CLI::RequiredError *>(&error))
		return missing(path, error);
	if (dynamic_cast<const CLI::ExtrasError *>(&error))
		return unexpected(path);
	return fmt::format("{} (see {} --help)", error.what(), spoken(path));
}

} // namespace malleo::cli
