// SPDX-License-Identifier: Apache-2.0
// What malleo knows about its own command line, read from the CLI11 definition so that it cannot drift from it:
// `malleo help [COMMAND]`, the nearest command to a mistyped one, and the words bash completion offers.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace malleo::cli {

// The hidden first argument of `malleo __complete CWORD WORD...` (the bash completion, docs/cli.md).
inline constexpr const char *kCompleteArgument = "__complete";

// Prints one candidate a line for word CWORD of WORDS (WORDS[0] is `malleo`): subcommands, or options of the
// subcommand reached and the global ones after a `-`. Nothing for an option's value, so bash completes file names.
int completeCommand(CLI::App &app, const std::vector<std::string> &arguments);

// The word of KNOWN that WORD most likely is a typo or a prefix of, if one is near enough.
std::optional<std::string> nearestWord(const std::string &word, const std::vector<std::string> &known);

// Checks the command words of a command line before CLI11 parses it. `help [COMMAND...]` becomes
// `[COMMAND...] --help`; an unknown command gets one line naming the nearest known one. Returns the failure's
// line, or nothing when the words are fine (they may have been rewritten).
std::optional<std::string> checkCommandWords(CLI::App &app, std::vector<std::string> &words);

} // namespace malleo::cli
