// SPDX-License-Identifier: Apache-2.0
// Running gnuplot (Debian's gnuplot-nox) on a script `malleo plot` wrote.
#pragma once

#include <optional>
#include <string>

#include "failure.h"

namespace malleo::cli {

// gnuplot on the PATH; when there is none, the failure says how to install it.
std::optional<std::string> findGnuplot(Failure &failure);

// Runs gnuplot on script with its output in logPath; a failure carries gnuplot's first complaint.
std::optional<Failure> runGnuplot(const std::string &gnuplot, const std::string &script,
				  const std::string &logPath);

// text as a gnuplot string literal: single quotes, which take nothing but '' specially; control
// characters become spaces so that a label stays one line.
std::string gnuplotString(const std::string &text);

} // namespace malleo::cli
