// SPDX-License-Identifier: Apache-2.0
// Where `malleo run` puts the ranks of a job whose agent is a node of a virtual cluster: the active ranks on that
// node, the spare ones of --max round-robin over others, each group one block of an MPMD launch with its own
// MALLEO_NODE and MALLEO_AGENT, so that every rank registers with its node's agent and the PCM bridge binds it to
// its node's CPUs (docs/cli.md, "malleo run"; docs/pcm-api.md, Modes).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cluster_file.h"

namespace malleo::cli {

// Consecutive world ranks launched alike.
struct RankBlock {
	unsigned ranks = 0;
	std::vector<std::pair<std::string, std::string>> env; // set for these ranks alone (MALLEO_NODE, MALLEO_AGENT)
	std::string host; // the host these ranks start on: a Slurm node (run_slurm.h) or a `cluster up --hosts` host;
			  // empty: --hosts, or where the launcher puts them
	std::vector<int> cpus; // their node's CPUs (a rankfile's slots)
};

// `active` ranks one by one over `activeOn` (names of the cluster's nodes; empty: all on `target`), then `spares`
// ranks one by one over `sparesOn` (empty: the other nodes in the cluster's order, then the target), neighbours on
// one node merged into one block.
std::vector<RankBlock> placeRanks(const ClusterFile &cluster, const ClusterNode &target, unsigned active,
				  unsigned spares, const std::vector<std::string> &sparesOn,
				  const std::vector<std::string> &activeOn = {});

// What every rank of the job gets to know the cluster: MALLEO_CLUSTER_DIR, MALLEO_NODES (name=CPU list of every
// node that has CPUs), MALLEO_NODE_AGENTS (name=local endpoint) and, on a cluster of hosts, MALLEO_NODE_HOSTS
// (name=host, where spawn mode starts a node's processes).
std::vector<std::pair<std::string, std::string>> clusterEnvironment(const std::string &dir,
								    const ClusterFile &cluster);

} // namespace malleo::cli
