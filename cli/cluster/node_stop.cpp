// SPDX-License-Identifier: Apache-2.0
#include "node_stop.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "agent_client.h"
#include "node_process.h"

namespace malleo::cli {

namespace {

constexpr auto kPollPeriod = std::chrono::milliseconds(20);
// How long a SIGKILLed process may take to vanish before we call it a survivor.
constexpr double kKillWait = 1.0;

// Waits until every pending node ends or the deadline passes; records when each ended.
void waitFor(const std::vector<ClusterNode> &nodes, std::vector<NodeStop> &stops,
	     std::vector<bool> &pending, double start, double deadline)
{
	for (;;) {
		bool any = false;
		for (std::size_t i = 0; i < nodes.size(); ++i) {
			if (!pending[i])
				continue;
			if (std::string how = reapChild(static_cast<pid_t>(nodes[i].pid)); !how.empty())
				stops[i].detail = how;
			if (processRuns(nodes[i].pid, nodes[i].startTime)) {
				any = true;
				continue;
			}
			pending[i] = false;
			stops[i].seconds = steadyNow() - start;
		}
		if (!any || steadyNow() >= deadline)
			return;
		std::this_thread::sleep_for(kPollPeriod);
	}
}

} // namespace

std::vector<NodeStop> stopNodes(const std::vector<ClusterNode> &nodes, double grace)
{
	std::vector<NodeStop> stops(nodes.size());
	std::vector<bool> pending(nodes.size(), false);
	double start = steadyNow();
	for (std::size_t i = 0; i < nodes.size(); ++i) {
		stops[i].name = nodes[i].name;
		stops[i].pid = nodes[i].pid;
		// Never signal a pid that now belongs to another process.
		if (!processRuns(nodes[i].pid, nodes[i].startTime)) {
			stops[i].result = "not_running";
			continue;
		}
		pending[i] = kill(static_cast<pid_t>(nodes[i].pid), SIGTERM) == 0;
		stops[i].result = pending[i] ? "stopped" : "not_running";
	}
	waitFor(nodes, stops, pending, start, start + grace);

	bool killed = false;
	for (std::size_t i = 0; i < nodes.size(); ++i) {
		if (!pending[i])
			continue;
		kill(static_cast<pid_t>(nodes[i].pid), SIGKILL);
		stops[i].result = "killed";
		killed = true;
	}
	if (killed)
		waitFor(nodes, stops, pending, start, steadyNow() + kKillWait);
	for (std::size_t i = 0; i < nodes.size(); ++i) {
		if (pending[i])
			stops[i].result = "survived";
		std::error_code ec;
		stops[i].leftFiles = !nodes[i].runDir.empty() &&
				     std::filesystem::exists(nodes[i].runDir + "/agent.json", ec);
	}
	return stops;
}

nlohmann::json toJson(const NodeStop &stop)
{
	nlohmann::json j = {{"name", stop.name},
			    {"pid", stop.pid},
			    {"result", stop.result},
			    {"seconds", stop.seconds},
			    {"left_agent_json", stop.leftFiles}};
	if (!stop.detail.empty())
		j["detail"] = stop.detail;
	return j;
}

std::string describe(const NodeStop &stop)
{
	std::string line = fmt::format("{} (pid {}): ", stop.name, stop.pid);
	if (stop.result == "stopped")
		line += fmt::format("stopped after {:.2f} s", stop.seconds);
	else if (stop.result == "killed")
		line += fmt::format("did not leave within the grace period; killed (SIGKILL)");
	else if (stop.result == "survived")
		line += "still running after SIGKILL";
	else
		line += "was not running";
	if (!stop.detail.empty())
		line += fmt::format(" ({})", stop.detail);
	if (stop.leftFiles && stop.result != "survived")
		line += "; left agent.json behind (not a clean leave)";
	return line;
}

} // namespace malleo::cli
