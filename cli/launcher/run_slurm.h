// SPDX-License-Identifier: Apache-2.0
// `malleo run` inside a Slurm allocation (SLURM_JOB_NODELIST set): the allocation's nodes, and the ranks placed on
// them as on a virtual cluster's: the active ones on the first node, the spares of --max one by one over the others,
// each block started on its node (the launcher's --host / -hosts) with its own MALLEO_NODE and, when the agents'
// endpoint is given as a pattern with %n, its node's agent (docs/deployment.md, "Under Slurm").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "run_placement.h"

namespace malleo::cli {

// The nodes of the allocation, in Slurm's order (`scontrol show hostnames` of SLURM_JOB_NODELIST). Nullopt with
// the problem said when scontrol cannot tell them.
std::optional<std::vector<std::string>> slurmNodes(std::string &problem);

// `active` ranks on nodes[0], then `spares` one by one over nodes[1..] and then nodes[0]; `agentPattern` (an
// endpoint in which %n stands for the node's name; empty: every rank's default agent) gives each block's agent.
std::vector<RankBlock> placeOnSlurmNodes(const std::vector<std::string> &nodes, unsigned active, unsigned spares,
					 const std::string &agentPattern);

} // namespace malleo::cli
