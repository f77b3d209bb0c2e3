// SPDX-License-Identifier: Apache-2.0
// What CLI11 finds wrong with a command line, said in a user's words: a number out of its range with the range and
// the value given, a missing argument by what it is, an unknown option with the nearest known one.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace malleo::cli {

// Checks for a number option: above 0, or from LOW to HIGH (both allowed); `whole` for an integer option. The
// failure reads "must be above 0 (got -1)" (CLI11 puts the option's name before it), where CLI11's own checks said
// "Value -1 not in range 0.000000 to 1797693..." (its largest double, all 309 digits).
CLI::Validator aboveZero(bool whole = false);
CLI::Validator between(double low, double high, bool whole = false);

// The one line for a parse failure of APP's command line (after `malleo: `).
std::string parseFailureLine(CLI::App &app, const CLI::ParseError &error);

} // namespace malleo::cli
