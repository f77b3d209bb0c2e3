// SPDX-License-Identifier: Apache-2.0
#include "run_slurm.h"

#include <cstdio>
#include <sstream>

#include <fmt/format.h>

namespace malleo::cli {

namespace {

std::string withNode(const std::string &pattern, const std::string &node)
{
	std::string out;
	for (std::size_t i = 0; i < pattern.size(); ++i) {
		if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'n') {
			out += node;
			++i;
		} else {
			out += pattern[i];
		}
	}
	return out;
}

void addRanks(std::vector<RankBlock> &blocks, const std::string &node, unsigned ranks, const std::string &pattern)
{
	if (ranks == 0)
		return;
	if (!blocks.empty() && blocks.back().host == node) {
		blocks.back().ranks += ranks;
		return;
	}
	RankBlock block{ranks, {{"MALLEO_NODE", node}}, node, {}};
	if (!pattern.empty())
		block.env.emplace_back("MALLEO_AGENT", withNode(pattern, node));
	blocks.push_back(std::move(block));
}

} // namespace

std::optional<std::vector<std::string>> slurmNodes(std::string &problem)
{
	// Without an argument scontrol expands SLURM_JOB_NODELIST itself: no quoting of the list through a shell.
	FILE *out = popen("scontrol show hostnames 2>&1", "r");
	if (!out) {
		problem = "inside a Slurm allocation, but scontrol cannot be run to read SLURM_JOB_NODELIST";
		return std::nullopt;
	}
	std::string text;
	char buffer[4096];
	for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, out)) > 0;)
		text.append(buffer, n);
	const int status = pclose(out);
	std::vector<std::string> nodes;
	std::istringstream lines(text);
	for (std::string line; std::getline(lines, line);)
		if (!line.empty())
			nodes.push_back(line);
	if (status != 0 || nodes.empty()) {
		problem = fmt::format("inside a Slurm allocation, but `scontrol show hostnames` cannot expand "
				      "SLURM_JOB_NODELIST: {}",
				      text.empty() ? "no output" : text.substr(0, text.find('\n')));
		return std::nullopt;
	}
	return nodes;
}

std::vector<RankBlock> placeOnSlurmNodes(const std::vector<std::string> &nodes, unsigned active, unsigned spares,
					 const std::string &agentPattern)
{
	std::vector<RankBlock> blocks;
	addRanks(blocks, nodes.front(), active, agentPattern);
	// The other nodes in order, then the first again, as a virtual cluster's spares go.
	for (unsigned i = 0; i < spares; ++i) {
		const std::size_t k = i % nodes.size();
		addRanks(blocks, k + 1 < nodes.size() ? nodes[k + 1] : nodes.front(), 1, agentPattern);
	}
	return blocks;
}

} // namespace malleo::cli
