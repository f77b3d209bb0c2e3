// SPDX-License-Identifier: Apache-2.0
// Running gnuplot (Debian's gnuplot-nox) on a script: `malleo plot` and `malleo sim --plot` draw with it.
// Below both cli/ and sim/; uses nothing of malleo.
#pragma once

#include <optional>
#include <string>

namespace malleo::plot {

// gnuplot on the PATH; when there is none, error says how to install it.
std::optional<std::string> findGnuplot(std::string &error);

// Runs gnuplot on script with its output in logPath; on a failure, the line that says why, with gnuplot's first
// complaint.
std::optional<std::string> runGnuplot(const std::string &gnuplot, const std::string &script,
				      const std::string &logPath);

// text as a gnuplot string literal: single quotes, which take nothing but '' specially; control
// characters become spaces so that a label stays one line.
std::string gnuplotString(const std::string &text);

} // namespace malleo::plot
