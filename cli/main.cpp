// SPDX-License-Identifier: Apache-2.0
// malleo: the command-line tool. The subcommands are a table (subcommands.cpp); main makes CLI11's definition
// from it, hands `sim`, the load's busy processes and the completion over before parsing, and runs the one parsed.

#include <iostream>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim_command.h"

#include "command_guide.h"
#include "cpu_load.h"
#include "failure.h"
#include "parse_failure.h"
#include "run_arguments.h"
#include "subcommands.h"

using namespace malleo::cli;

namespace {

constexpr const char *kVersion = "0.1.0";

// Each subcommand of the table made in app, beside its entry, in the table's order.
std::vector<std::pair<CLI::App *, const Subcommand *>> defineSubcommands(CLI::App &app, Options &o)
{
	std::vector<std::pair<CLI::App *, const Subcommand *>> made;
	for (const Subcommand &entry : subcommands()) {
		CLI::App *parent = entry.parent ? app.get_subcommand(entry.parent) : &app;
		CLI::App *command = parent->add_subcommand(entry.name, entry.description);
		if (entry.define)
			entry.define(*command, o);
		made.emplace_back(command, &entry);
	}
	return made;
}

// Parses the command line into o; an exit status when there is nothing to run (--help, --version, a bad line).
std::optional<int> parse(CLI::App &app, int argc, char **argv, Options &o)
{
	RunArguments runArguments = sortRunArguments(argc, argv);
	if (!runArguments.problem.empty()) {
		std::cerr << "malleo run: " << runArguments.problem << '\n';
		return kExitBadInput;
	}
	o.run.launcherOptions = std::move(runArguments.launcherOptions);
	// Before CLI11, whose answer to a typo is "A subcommand is required".
	if (std::optional<std::string> problem = checkCommandWords(app, runArguments.words))
		return report({kExitBadInput, *problem});
	std::vector<char *> words;
	for (std::string &word : runArguments.words)
		words.push_back(word.data());
	try {
		app.parse(int(words.size()), words.data());
	} catch (const CLI::Success &e) {
		return app.exit(e); // --help, --version
	} catch (const CLI::ParseError &e) {
		return report({kExitBadInput, parseFailureLine(app, e)});
	}
	return std::nullopt;
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"malleo: watch and drive malleo agents, and run virtual clusters on one machine.", "malleo"};
	app.footer("Global options may also follow the subcommand. Exit status: 0 ok, 1 no agent answers or "
		   "the operation failed, 2 bad usage. See docs/cli.md.");
	app.require_subcommand(1);
	app.fallthrough();
	Options o;
	defineGlobalOptions(app, o.global);
	app.set_version_flag("--version", std::string("malleo ") + kVersion);
	const std::vector<std::pair<CLI::App *, const Subcommand *>> made = defineSubcommands(app, o);

	// A process of `malleo load`: never a command a person types, so not in the help.
	if (argc >= 2 && std::string_view(argv[1]) == kBurnerArgument)
		return burnerMain(argc, argv);
	if (argc >= 2 && std::string_view(argv[1]) == "sim") {
		std::string name = "malleo sim";
		argv[1] = name.data();
		return malleo::sim::simCommand(argc - 1, argv + 1);
	}
	if (argc >= 2 && std::string_view(argv[1]) == kCompleteArgument)
		return completeCommand(app, std::vector<std::string>(argv + 2, argv + argc));
	if (argc == 1) {
		std::cout << app.help();
		return kExitBadInput;
	}
	if (std::optional<int> status = parse(app, argc, argv, o))
		return *status;
	for (const auto &[command, entry] : made)
		if (entry->run && command->parsed())
			return entry->run(o);
	return report({kExitBadInput, "no subcommand (see malleo --help)"});
}
