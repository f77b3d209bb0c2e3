// SPDX-License-Identifier: Apache-2.0
// `malleo run`'s words, sorted before CLI11 sees them, so that run takes what people type for mpirun: `-np N` is
// `-n N`, and an option malleo does not know goes to the launcher with the words after it up to the next option
// or `--`, in their order (docs/cli.md, "malleo run"). CLI11 cannot do either: its single-dash names are one letter,
// and its extras lose the values that follow them to the program's words.
#pragma once

#include <string>
#include <vector>

namespace malleo::cli {

struct RunArguments {
	std::vector<std::string> words;		  // argv for CLI11: argv without the launcher's options
	std::vector<std::string> launcherOptions; // in the order given
	std::string problem;			  // one line when the words cannot be sorted
};

// argv unchanged unless its subcommand is `run`.
RunArguments sortRunArguments(int argc, char **argv);

} // namespace malleo::cli
