// SPDX-License-Identifier: Apache-2.0
// `--plot FILE`: the data and the gnuplot script of a run set's plot, iteration time over simulated time per
// policy with each reconfiguration marked by its kind. gnuplot itself is run by sim_command.cpp through
// plot/gnuplot.h (as `malleo plot` does); what is here is pure, so a test can read the data file.
#pragma once

#include <string>

#include "run_report.h"

namespace malleo::sim {

// Two gnuplot data blocks per run, in the run set's order (index 2k: its iterations, 2k+1: its reconfigurations):
//   iterations:        start (s), iteration time (s), iteration, active processes
//   reconfigurations:  time (s), iteration time there (s), iteration, kind, count, from node, to node ("-": none)
// Each block is headed by a comment line naming the policy; an empty block holds one row of NaN (kind `none`), as
// gnuplot counts only blocks with data among the indices.
std::string plotData(const RunSet &set);

// The script: `kind` is "png" or "svg", `output` the image, `data` the file plotData's text is in.
std::string plotScript(const RunSet &set, const std::string &kind, const std::string &output,
		       const std::string &data);

} // namespace malleo::sim
