// SPDX-License-Identifier: Apache-2.0
#include "apps_merge.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "agent_client.h"
#include "reply_fields.h"

namespace malleo::cli {

namespace {

bool hostsRankZero(const nlohmann::json &app)
{
	const nlohmann::json *processes = field(app, {"processes"});
	return processes && processes->is_array() &&
	       std::any_of(processes->begin(), processes->end(),
			   [](const nlohmann::json &p) { return p.value("rank", -1L) == 0; });
}

void takeReply(AgentApps &answer, const Message &reply, const AgentClient &client)
{
	const nlohmann::json *apps = field(reply, {"apps"});
	if (reply["type"] == "error") {
		answer.problem = client.refusal("apps", reply);
	} else if (reply["type"] != "apps_reply" || !apps || !apps->is_array()) {
		answer.problem = {
		    kExitFailed,
		    fmt::format("the agent at {} answered 'apps' with '{}' and no apps list",
				client.endpoint(), text(reply, {"type"}))};
	} else {
		answer.agent = text(reply, {"from"});
		answer.apps = *apps;
		answer.problem = {};
	}
}

} // namespace

std::vector<AgentApps> askApps(const std::vector<Target> &targets, double timeout)
{
	zmq::context_t context(1);
	std::vector<AgentApps> replies(targets.size());
	std::vector<std::unique_ptr<AgentClient>> clients(targets.size());
	std::vector<uint64_t> ids(targets.size(), 0);
	for (std::size_t i = 0; i < targets.size(); ++i) {
		replies[i].node = targets[i].name;
		clients[i] =
		    AgentClient::create(context, targets[i].endpoint, timeout, replies[i].problem);
		if (!clients[i])
			continue;
		std::optional<uint64_t> id = clients[i]->send("apps");
		replies[i].problem = clients[i]->silence();
		if (id)
			ids[i] = *id;
	}
	const double deadline = steadyNow() + timeout;
	for (;;) {
		std::vector<zmq::pollitem_t> items;
		std::vector<std::size_t> waiting;
		for (std::size_t i = 0; i < targets.size(); ++i)
			if (clients[i] && ids[i]) {
				items.push_back(clients[i]->pollItem());
				waiting.push_back(i);
			}
		const double left = deadline - steadyNow();
		if (items.empty() || left <= 0)
			break;
		try {
			zmq::poll(
			    items.data(), items.size(),
			    std::chrono::milliseconds(static_cast<long>(std::ceil(left * 1000))));
		} catch (const zmq::error_t &e) {
			if (e.num() != EINTR)
				throw;
			break;
		}
		for (std::size_t i : waiting)
			for (const Message &m : clients[i]->drain())
				if (answers(m) == ids[i] ||
				    (m["type"] == "error" && answers(m) == 0)) {
					takeReply(replies[i], m, *clients[i]);
					ids[i] = 0;
				}
	}
	return replies;
}

nlohmann::json mergeApps(const std::vector<AgentApps> &answers)
{
	// Per application, in the agents' order: which agent, and its entry.
	std::map<std::string, std::vector<std::pair<std::string, const nlohmann::json *>>> byId;
	nlohmann::json agents = nlohmann::json::array(), unreachable = nlohmann::json::array();
	for (const AgentApps &a : answers) {
		if (!a.problem.line.empty()) {
			unreachable.push_back({{"node", a.node}, {"problem", a.problem.line}});
			continue;
		}
		const std::string node = a.agent.empty() || a.agent == "-" ? a.node : a.agent;
		agents.push_back(node);
		for (const nlohmann::json &app : a.apps)
			if (app.is_object())
				byId[text(app, {"id"})].emplace_back(node, &app);
	}
	nlohmann::json apps = nlohmann::json::array();
	for (const auto &[id, entries] : byId) {
		// The agent hosting rank 0 speaks for the application: it has the commands, results
		// and iteration times.
		auto root = std::find_if(entries.begin(), entries.end(),
					 [](const auto &e) { return hostsRankZero(*e.second); });
		nlohmann::json merged = *(root != entries.end() ? root : entries.begin())->second;
		nlohmann::json processes = nlohmann::json::array(), nodes = nlohmann::json::array();
		for (const auto &[node, app] : entries) {
			long active = 0, parked = 0;
			const nlohmann::json *list = field(*app, {"processes"});
			for (const nlohmann::json &p :
			     list && list->is_array() ? *list : nlohmann::json::array()) {
				nlohmann::json process = p;
				process["node"] = node;
				// A process that never said is counted as the agent shows it:
				// active until it reports otherwise.
				(p.value("active", true) ? active : parked) += 1;
				processes.push_back(std::move(process));
			}
			nodes.push_back({{"node", node}, {"active", active}, {"parked", parked}});
		}
		merged["processes"] = std::move(processes);
		merged["nodes"] = std::move(nodes);
		apps.push_back(std::move(merged));
	}
	return {{"agents", std::move(agents)},
		{"unreachable", std::move(unreachable)},
		{"apps", std::move(apps)}};
}

} // namespace malleo::cli
