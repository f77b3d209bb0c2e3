// SPDX-License-Identifier: Apache-2.0
#include "run_arguments.h"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

namespace malleo::cli {

namespace {

// Options of malleo that take a value, global ones first (they may follow the subcommand too).
constexpr std::array kGlobalWithValue = {"--agent", "--node", "--cluster-dir", "--timeout"};
constexpr std::array kRunWithValue = {"-n",	      "--max",	"--mpi",       "--hosts",	"--profile-dir",
				      "--mode",	      "--spares-on", "--active-on", "--launcher"};
constexpr std::array kRunFlags = {"-h", "--help", "--json"};

template<std::size_t N>
bool among(const std::array<const char *, N> &names, std::string_view word)
{
	return std::any_of(names.begin(), names.end(), [&](const char *name) { return word == name; });
}

bool isOption(std::string_view word)
{
	return word.size() > 1 && word.front() == '-';
}

// "--max=5" names --max; "-n4" is -n 4 to CLI11.
std::string_view optionName(std::string_view word)
{
	if (word.starts_with("--"))
		return word.substr(0, word.find('='));
	if (word.starts_with("-n") && word.size() > 2 &&
	    word.find_first_not_of("0123456789", 2) == std::string_view::npos)
		return "-n";
	return word;
}

// The words of run that CLI11 may read, with -np (and Open MPI's --np) renamed; launcher options and their values
// set aside.
void sortRun(const std::vector<std::string> &in, std::size_t from, RunArguments &out)
{
	const bool dashes = std::find(in.begin() + std::ptrdiff_t(from), in.end(), "--") != in.end();
	std::size_t i = from;
	while (i < in.size()) {
		const std::string &word = in[i];
		if (word == "--")
			break;
		if (!isOption(word)) {
			// The program, given without `--`: everything from here is its, as for mpirun.
			out.words.push_back("--");
			break;
		}
		const std::string_view name = optionName(word);
		const bool np = name == "-np" || name == "--np";
		const bool takesValue = among(kGlobalWithValue, name) || among(kRunWithValue, name) || np;
		if (takesValue || among(kRunFlags, name)) {
			const std::size_t equals = word.find('=');
			out.words.push_back(np ? "-n" : word);
			if (np && equals != std::string::npos)
				out.words.push_back(word.substr(equals + 1));
			++i;
			const bool attached = equals != std::string::npos || (name == "-n" && word != "-n");
			if (takesValue && !attached && i < in.size())
				out.words.push_back(in[i++]);
			continue;
		}
		if (!dashes) {
			out.problem = fmt::format("{} is not an option of malleo run: to pass it to the launcher, put `--` "
						  "before the program (malleo run -n N {} ... -- PROGRAM ARGS)",
						  word, word);
			return;
		}
		out.launcherOptions.push_back(word);
		for (++i; i < in.size() && in[i] != "--" && !isOption(in[i]); ++i)
			out.launcherOptions.push_back(in[i]);
	}
	out.words.insert(out.words.end(), in.begin() + std::ptrdiff_t(i), in.end());
}

} // namespace

RunArguments sortRunArguments(int argc, char **argv)
{
	const std::vector<std::string> in(argv, argv + argc);
	RunArguments out;
	std::size_t i = 1;
	while (i < in.size() && isOption(in[i]))
		i += among(kGlobalWithValue, in[i]) ? 2 : 1;
	if (i >= in.size() || in[i] != "run") {
		out.words = in;
		return out;
	}
	out.words.assign(in.begin(), in.begin() + std::ptrdiff_t(i) + 1);
	sortRun(in, i + 1, out);
	return out;
}

} // namespace malleo::cli
