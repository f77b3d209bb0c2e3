// SPDX-License-Identifier: Apache-2.0
// `malleo-sim` and `malleo sim`: one entry point for both.
#pragma once

namespace malleo::sim {

// Parses the arguments (argv[0] is the program's name), runs the scenario
// under the chosen decision module and the baselines, prints the summary and
// writes the outputs. Returns 0, 1 when a run failed, or 2 for bad flags or a
// bad scenario (one line on stderr).
int simCommand(int argc, char **argv);

} // namespace malleo::sim
