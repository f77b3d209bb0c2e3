// SPDX-License-Identifier: Apache-2.0
#include "command_guide.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster_file.h"

namespace malleo::cli {

namespace {

std::vector<CLI::App *> commandsOf(CLI::App &app)
{
	return app.get_subcommands([](CLI::App *sub) { return !sub->get_group().empty(); });
}

CLI::App *commandNamed(CLI::App &app, const std::string &name)
{
	for (CLI::App *sub : commandsOf(app))
		if (sub->get_name() == name)
			return sub;
	return nullptr;
}

// The option of APP (or of the apps it falls through to) that WORD names, if any.
const CLI::Option *optionNamed(const std::vector<CLI::App *> &apps, const std::string &word)
{
	const std::string name = word.substr(0, word.find('='));
	for (CLI::App *app : apps)
		for (const CLI::Option *opt : app->get_options())
			if (!opt->get_positional() && opt->check_name(name))
				return opt;
	return nullptr;
}

bool takesValue(const CLI::Option *opt, const std::string &word)
{
	return opt && opt->get_expected_max() > 0 && word.find('=') == std::string::npos;
}

// Optimal string alignment distance: Levenshtein plus the swap of two neighbours, the commonest typo (stauts).
std::size_t distance(const std::string &a, const std::string &b)
{
	std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
	for (std::size_t i = 0; i <= a.size(); ++i)
		d[i][0] = i;
	for (std::size_t j = 0; j <= b.size(); ++j)
		d[0][j] = j;
	for (std::size_t i = 1; i <= a.size(); ++i)
		for (std::size_t j = 1; j <= b.size(); ++j) {
			d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
				d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
		}
	return d[a.size()][b.size()];
}

std::string unknownCommand(CLI::App &parent, const std::string &word, const std::string &path)
{
	std::vector<std::string> names;
	for (CLI::App *sub : commandsOf(parent))
		names.push_back(sub->get_name());
	if (std::optional<std::string> nearest = nearestWord(word, names))
		return fmt::format("unknown command '{}{}'; did you mean '{}{}'? (see malleo --help)", path, word, path,
				   *nearest);
	return fmt::format("unknown command '{}{}'; the commands are {} (see malleo --help)", path, word,
			   fmt::join(names, ", "));
}

std::string unknownOption(const std::vector<CLI::App *> &path, const std::string &word, const std::string &spoken)
{
	const std::string name = word.substr(0, word.find('='));
	std::vector<std::string> names = {"--help", "--version"};
	for (CLI::App *app : path)
		for (const CLI::Option *opt : app->get_options())
			for (const std::string &l : opt->get_lnames())
				names.push_back("--" + l);
	const std::string where = "malleo " + spoken;
	if (std::optional<std::string> nearest = nearestWord(name, names))
		return fmt::format("unknown option '{}'; did you mean '{}'? (see {}--help)", name, *nearest, where);
	return fmt::format("unknown option '{}' (see {}--help)", name, where);
}

// The virtual cluster's node names, for `--node <TAB>` and `drain <TAB>`: from the cluster file of the directory the
// line names (--cluster-dir), else MALLEO_CLUSTER_DIR, else the default, as the command itself will look (target.cpp).
// Nothing when no cluster is up, so bash offers file names.
std::vector<std::string> clusterNodeNames(const std::vector<std::string> &words, std::size_t cword)
{
	std::string dir;
	for (std::size_t i = 1; i < cword && i < words.size(); ++i) {
		if (words[i] == "--cluster-dir" && i + 1 < cword)
			dir = words[i + 1];
		else if (words[i].starts_with("--cluster-dir="))
			dir = words[i].substr(std::string("--cluster-dir=").size());
	}
	if (dir.empty()) {
		const char *env = std::getenv("MALLEO_CLUSTER_DIR");
		dir = env && *env ? env : fmt::format("/tmp/malleo-cluster-{}", geteuid());
	}
	Failure ignored;
	std::vector<std::string> names;
	if (std::optional<ClusterFile> cluster = readClusterFile(dir, ignored))
		for (const ClusterNode &node : cluster->nodes)
			names.push_back(node.name);
	return names;
}

} // namespace

std::optional<std::string> nearestWord(const std::string &word, const std::vector<std::string> &known)
{
	std::string nearest;
	std::size_t best = std::string::npos;
	for (const std::string &name : known) {
		// A prefix is as good as a typo: `malleo stat` means status.
		const std::size_t d = name.starts_with(word) ? 1 : distance(word, name);
		if (d < best) {
			best = d;
			nearest = name;
		}
	}
	// Farther than a third of the word is another word, not a typo of it.
	if (best <= std::max<std::size_t>(2, word.size() / 3))
		return nearest;
	return std::nullopt;
}

int completeCommand(CLI::App &app, const std::vector<std::string> &arguments)
{
	// arguments: CWORD, then the words of the line, malleo first.
	if (arguments.empty())
		return 2;
	std::size_t cword = 0;
	try {
		cword = std::stoul(arguments[0]);
	} catch (const std::exception &) {
		return 2;
	}
	const std::vector<std::string> words(arguments.begin() + 1, arguments.end());
	const std::string current = cword < words.size() ? words[cword] : "";
	std::vector<CLI::App *> path = {&app};
	bool afterDashes = false;
	for (std::size_t i = 1; i < cword && i < words.size(); ++i) {
		const std::string &w = words[i];
		if (w == "--")
			afterDashes = true;
		else if (w.starts_with("-"))
			i += takesValue(optionNamed(path, w), w); // its value is no command
		else if (CLI::App *sub = commandNamed(*path.back(), w))
			path.push_back(sub);
	}
	// After `--` (malleo run's program) or for an option's value: nothing, so bash offers file names.
	if (afterDashes || path.back()->get_name() == "sim")
		return 0;
	std::vector<std::string> candidates;
	if (cword >= 2 && cword - 1 < words.size() && words[cword - 1].starts_with("-") &&
	    takesValue(optionNamed(path, words[cword - 1]), words[cword - 1])) {
		if (words[cword - 1] == "--node")
			candidates = clusterNodeNames(words, cword);
	} else if (!current.starts_with("-") && path.back()->get_name() == "drain") {
		candidates = clusterNodeNames(words, cword);
	} else if (current.starts_with("-")) {
		// Global options hold after the subcommand too (fallthrough), so every app on the path offers its own.
		for (CLI::App *a : path)
			for (const CLI::Option *opt : a->get_options()) {
				for (const std::string &l : opt->get_lnames())
					candidates.push_back("--" + l);
				for (const std::string &s : opt->get_snames())
					candidates.push_back("-" + s);
			}
		candidates.push_back("--help");
	} else {
		for (CLI::App *sub : commandsOf(*path.back()))
			candidates.push_back(sub->get_name());
		if (path.size() == 1)
			candidates.push_back("help");
	}
	std::sort(candidates.begin(), candidates.end());
	candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
	for (const std::string &c : candidates)
		if (c.starts_with(current))
			std::cout << c << '\n';
	return 0;
}

std::optional<std::string> checkCommandWords(CLI::App &app, std::vector<std::string> &words)
{
	std::vector<CLI::App *> path = {&app};
	std::string spoken; // the command words so far, for the message: "cluster "
	for (std::size_t i = 1; i < words.size(); ++i) {
		const std::string &w = words[i];
		if (w == "--")
			return std::nullopt;
		if (w.starts_with("-")) {
			const CLI::Option *opt = optionNamed(path, w);
			// Before the command, an unknown option would make its value look like a command (`malleo
			// --tiemout 3 status`: "unknown command '3'"). After it, CLI11 finds it, among the command's own.
			if (!opt && !commandsOf(*path.back()).empty() && w != "--help" && w != "-h" && w != "--version")
				return unknownOption(path, w, spoken);
			i += takesValue(opt, w);
			continue;
		}
		CLI::App *here = path.back();
		if (here == &app && w == "help") {
			// `malleo help cluster up` is `malleo cluster up --help`.
			words.erase(words.begin() + std::ptrdiff_t(i));
			words.push_back("--help");
			return checkCommandWords(app, words);
		}
		if (commandsOf(*here).empty())
			return std::nullopt; // a command's own positional arguments from here on
		CLI::App *sub = commandNamed(*here, w);
		if (!sub)
			return unknownCommand(*here, w, spoken);
		if (sub->get_name() == "sim")
			return std::nullopt; // the simulator reads its own flags
		path.push_back(sub);
		spoken += w + " ";
	}
	// Words without a command where one is needed (`malleo --node n1`, `malleo cluster`): name the choices, as
	// CLI11's "A subcommand is required" does not. --help and --version need none.
	for (const std::string &w : words)
		if (w == "--help" || w == "-h" || w == "--version")
			return std::nullopt;
	std::vector<std::string> names;
	for (CLI::App *sub : commandsOf(*path.back()))
		names.push_back(sub->get_name());
	if (names.empty())
		return std::nullopt;
	const std::string which = "malleo " + spoken; // "malleo cluster "
	return fmt::format("{} needs a command: {} (see {}--help)", which.substr(0, which.size() - 1),
			   fmt::join(names, ", "), which);
}

} // namespace malleo::cli
