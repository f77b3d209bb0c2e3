// SPDX-License-Identifier: Apache-2.0
// `malleo status`: what one agent says about itself.
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "agent_client.h"
#include "views.h"
#include "human_units.h"
#include "reply_fields.h"
#include "target.h"

namespace malleo::cli {

namespace {

// "profiling=host (builtin) protocol=p2p decision=loaddiff": the agent names
// each module as a string or as {"name", "source"}.
std::string moduleList(const nlohmann::json &modules)
{
	if (!modules.is_object())
		return modules.is_null() ? "-" : scalarText(modules);
	std::string list;
	for (auto it = modules.begin(); it != modules.end(); ++it) {
		std::string name = it->is_object() ? text(*it, {"name"}) : scalarText(*it);
		std::string source = it->is_object() ? text(*it, {"source"}) : "-";
		list += fmt::format("{}{}={}", list.empty() ? "" : "  ", it.key(), name);
		if (source != "-")
			list += fmt::format(" ({})", source);
	}
	return list.empty() ? "-" : list;
}

std::string wrmState(const nlohmann::json &reply)
{
	const nlohmann::json *outstanding = field(reply, {"wrm", "outstanding"});
	std::string state = outstanding && outstanding->is_boolean() && outstanding->get<bool>()
				    ? "a request outstanding"
				    : "idle";
	if (std::optional<double> backoff = number(reply, {"wrm", "backoff"}))
		state += fmt::format(", backoff {}", formatDuration(*backoff));
	if (std::optional<double> next = number(reply, {"wrm", "next_in"}))
		state += fmt::format(", next in {}", formatDuration(*next));
	return state;
}

// Counters "rx.heartbeat", "wrm.sent", ... grouped by what precedes the first dot.
std::string counterLines(const nlohmann::json &counters)
{
	if (!counters.is_object() || counters.empty())
		return "  (none)\n";
	std::map<std::string, std::string> groups;
	for (auto it = counters.begin(); it != counters.end(); ++it) {
		const std::string &key = it.key();
		auto dot = key.find('.');
		std::string group = dot == std::string::npos ? "other" : key.substr(0, dot);
		std::string name = dot == std::string::npos ? key : key.substr(dot + 1);
		std::string &line = groups[group];
		line += fmt::format("{}{} {}", line.empty() ? "" : "  ", name, scalarText(*it));
	}
	std::string out;
	for (const auto &[group, line] : groups)
		out += fmt::format("  {:<10} {}\n", group, line);
	return out;
}

void printHuman(const nlohmann::json &r)
{
	const nlohmann::json *joined = field(r, {"agent", "joined"});
	std::string version = text(r, {"agent", "version"});
	std::cout << fmt::format("agent     {}{}\n", text(r, {"agent", "id"}),
				 version == "-" ? "" : " (malleod " + version + ")");
	std::cout << fmt::format("endpoint  {}\n", text(r, {"agent", "endpoint"}));
	// Empty when the agent takes no polls from other nodes (app_listen off); absent from an older agent.
	const std::string remote = text(r, {"agent", "app_endpoint"});
	std::cout << fmt::format("remote    {}\n", remote == "-" ? "off" : remote + " (coordinators on other nodes)");
	std::cout << fmt::format("group     {}\n", text(r, {"agent", "group"}));
	std::optional<double> uptime = number(r, {"agent", "uptime"});
	std::cout << fmt::format("uptime    {}{}\n", uptime ? formatDuration(*uptime) : "-",
				 joined && joined->is_boolean()
					 ? (joined->get<bool>() ? ", joined the overlay" : ", not joined yet")
					 : "");
	const nlohmann::json *modules = field(r, {"modules"});
	std::cout << fmt::format("modules   {}\n", moduleList(modules ? *modules : nlohmann::json()));
	std::cout << fmt::format("profile   PW {}  APW {}  UPW {}  σ {}  cores {}  procs {}  ctxsw {}/s\n",
				 fixed(r, {"profile", "pw"}, 2), fixed(r, {"profile", "apw"}, 2),
				 fixed(r, {"profile", "upw"}, 2), fixed(r, {"profile", "sigma"}, 3),
				 text(r, {"profile", "cores"}), text(r, {"profile", "procs"}),
				 fixed(r, {"profile", "ctxsw"}, 0));
	std::cout << fmt::format("peers     {} alive, {} in view, {} candidates\n",
				 text(r, {"peers", "alive"}), text(r, {"peers", "in_view"}),
				 text(r, {"peers", "candidates"}));
	std::cout << fmt::format("WRM       {}\n", wrmState(r));
	const nlohmann::json *counters = field(r, {"counters"});
	std::cout << "counters\n" << counterLines(counters ? *counters : nlohmann::json());
}

} // namespace

int statusCommand(const GlobalOptions &options, bool json)
{
	Failure failure;
	zmq::context_t context(1);
	std::unique_ptr<AgentClient> client = connectSingleTarget(context, options, failure);
	if (!client)
		return report(failure);
	std::optional<Message> reply = client->request("status", failure);
	if (!reply)
		return report(failure);
	if ((*reply)["type"] != "status_reply")
		return report({kExitFailed, fmt::format("the agent at {} answered 'status' with '{}'",
							client->endpoint(), text(*reply, {"type"}))});
	if (json)
		std::cout << reply->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
	else
		printHuman(*reply);
	return kExitOk;
}

} // namespace malleo::cli
