// SPDX-License-Identifier: Apache-2.0
// `malleo cluster status`: which nodes of the virtual cluster still run.
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster_file.h"
#include "cluster_commands.h"
#include "node_process.h"
#include "target.h"
#include "text_table.h"

namespace malleo::cli {

int clusterStatusCommand(const GlobalOptions &options, bool json)
{
	const std::string dir = clusterDir(options);
	Failure failure;
	std::optional<ClusterFile> cluster = readClusterFile(dir, failure);
	if (!cluster) {
		if (failure.line.empty())
			failure.line = fmt::format("no cluster is up in {} (start one with `malleo cluster up --nodes K`)", dir);
		return report(failure);
	}

	std::size_t running = 0;
	nlohmann::json nodes = nlohmann::json::array();
	// A cluster of hosts (`cluster up --hosts`) has the HOST column `cluster up` showed.
	const bool hosts = !cluster->nodes.empty() && !cluster->nodes.front().host.empty();
	std::vector<std::string> header = {"NAME", "PID", "STATE", "CPU", "ENDPOINT", "LOCAL"};
	if (hosts)
		header.insert(header.begin() + 1, "HOST");
	TextTable table(header);
	table.alignRight(hosts ? 2 : 1);
	for (const ClusterNode &node : cluster->nodes) {
		bool runs = processRuns(node.pid, node.startTime);
		running += runs;
		nlohmann::json j = toJson(node);
		j["running"] = runs;
		nodes.push_back(std::move(j));
		std::vector<std::string> row = {node.name, std::to_string(node.pid), runs ? "running" : "gone",
						fmt::format("{}", fmt::join(node.cpus, ",")), node.endpoint, node.local};
		if (hosts)
			row.insert(row.begin() + 1, node.host);
		table.addRow(row);
	}
	if (json) {
		std::cout << nlohmann::json({{"dir", dir}, {"running", running}, {"nodes", nodes}}).dump(2) << '\n';
		return kExitOk;
	}
	std::cout << fmt::format("cluster in {}: {} of {} nodes running\n", dir, running, cluster->nodes.size())
		  << table.render();
	return kExitOk;
}

} // namespace malleo::cli
