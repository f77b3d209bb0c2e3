// SPDX-License-Identifier: Apache-2.0
// `malleo apps`: the MPI applications registered with one agent, or with every
// node of the virtual cluster merged (an application once, its processes by
// the node whose agent they report to), and what they reported.
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "apps_merge.h"
#include "cluster_file.h"
#include "views.h"
#include "human_units.h"
#include "reply_fields.h"
#include "target.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

std::string processCounts(const nlohmann::json &app)
{
	std::string line;
	const nlohmann::json *nodes = field(app, {"nodes"});
	if (!nodes || !nodes->is_array())
		return "-";
	for (const nlohmann::json &n : *nodes) {
		const long active = n.value("active", 0L), parked = n.value("parked", 0L);
		std::string counts;
		if (active)
			counts = fmt::format("{} active", active);
		if (parked)
			counts += fmt::format("{}{} parked", counts.empty() ? "" : ", ", parked);
		line += fmt::format("{}{}: {}", line.empty() ? "" : "; ", text(n, {"node"}),
				    counts.empty() ? "none" : counts);
	}
	return line.empty() ? "none" : line;
}

std::string rate(const nlohmann::json &app)
{
	const nlohmann::json *sizes = field(app, {"iteration_times"});
	if (!sizes || !sizes->is_array() || sizes->empty())
		return "- (no iteration times reported)";
	const std::optional<double> seconds = number(sizes->back(), {"seconds"});
	if (!seconds || *seconds <= 0)
		return "-";
	return fmt::format("{:.2f} iterations/s ({:.4f} s each at {} processes)", 1.0 / *seconds,
			   *seconds, text(sizes->back(), {"processes"}));
}

// "split 2: 2 -> 4 processes, ok at iteration 1117 (command 3, 0.028 s, 1.0 MiB moved)"; a failure
// says why.
std::string lastReconfiguration(const nlohmann::json &r)
{
	std::string what = text(r, {"op"});
	if (r.contains("count"))
		what += " " + text(r, {"count"});
	if (r.contains("before") && r.contains("after"))
		what +=
		    fmt::format(": {} -> {} processes", text(r, {"before"}), text(r, {"after"}));
	const bool ok = r.value("ok", false);
	std::string at = r.contains("iteration") ? " at iteration " + text(r, {"iteration"}) : "";
	std::string details = r.contains("command") ? "command " + text(r, {"command"}) : "";
	if (r.contains("duration"))
		details += (details.empty() ? "" : ", ") + fixed(r, {"duration"}, 3) + " s";
	if (const std::optional<double> bytes = number(r, {"bytes"}))
		details += (details.empty() ? "" : ", ") + formatBytes(*bytes) + " moved";
	std::string line = fmt::format("{}, {}{}{}", what, ok ? "ok" : "failed", at,
				       details.empty() ? "" : " (" + details + ")");
	if (!ok && r.contains("text"))
		line += ": " + text(r, {"text"});
	return line;
}

void printApp(const nlohmann::json &app)
{
	std::cout << fmt::format("{}  {}  size {}  root {}\n", text(app, {"id"}),
				 app.value("malleable", false) ? "malleable" : "not malleable",
				 text(app, {"size"}), text(app, {"root_agent"}));
	std::cout << fmt::format("  processes  {}\n", processCounts(app));
	std::cout << fmt::format("  rate       {}\n", rate(app));
	// What the application said it has left (PCM_Remaining_iterations) and what its last resize
	// cost: the two numbers sweetspot weighs against each other.
	if (const nlohmann::json *left = field(app, {"remaining_iterations"});
	    left && left->is_number())
		std::cout << fmt::format("  remaining  {} iterations (said by the application)\n",
					 text(app, {"remaining_iterations"}));
	if (const nlohmann::json *cost = field(app, {"redistribution_cost"});
	    cost && cost->is_number())
		std::cout << fmt::format("  resize     {} s (the last one's cost, measured)\n",
					 fixed(app, {"redistribution_cost"}, 3));
	const nlohmann::json *command = field(app, {"command"});
	if (command && command->is_object())
		std::cout << fmt::format(
		    "  command    {}: {} {}{} ({}, {} s ago)\n", text(*command, {"command"}),
		    text(*command, {"op"}), text(*command, {"count"}),
		    command->contains("node") ? " on " + text(*command, {"node"}) : "",
		    text(*command, {"state"}), fixed(*command, {"age"}, 1));
	const nlohmann::json *result = field(app, {"last_result"});
	if (result && result->is_object()) {
		std::cout << fmt::format("  last       {}\n", lastReconfiguration(*result));
		// The bridge's structured reason for a refusal, as the decision modules get it.
		if (const nlohmann::json *refusal = field(*result, {"refusal"}); refusal && refusal->is_object())
			std::cout << fmt::format("  refused    {}{}\n", text(*refusal, {"kind"}),
						 refusal->contains("most") ? " (most " + text(*refusal, {"most"}) + ")"
									   : std::string());
		// Who chose it and why, when a decision module did (a forced command has neither).
		if (result->contains("why") || result->contains("decision"))
			std::cout << fmt::format(
			    "  why        {}{}\n",
			    result->contains("decision") ? text(*result, {"decision"}) + ": " : "",
			    text(*result, {"why"}));
	}
	TextTable table(
	    {"NODE", "RANK", "PID", "UNITS", "STATE", "CPU", "BYTES_LOCAL", "BYTES_REMOTE"});
	for (std::size_t c : {1, 2, 3, 5, 6, 7})
		table.alignRight(c);
	const nlohmann::json *processes = field(app, {"processes"});
	if (processes && processes->is_array())
		for (const nlohmann::json &p : *processes) {
			const nlohmann::json *active = field(p, {"active"});
			table.addRow({text(p, {"node"}), text(p, {"rank"}), text(p, {"pid"}),
				      text(p, {"units"}),
				      active && active->is_boolean()
					  ? (active->get<bool>() ? "active" : "parked")
					  : "-",
				      fixed(p, {"cpu_share"}, 2), fixed(p, {"bytes_local"}, 0),
				      fixed(p, {"bytes_remote"}, 0)});
		}
	std::cout << table.render();
}

void printApps(const std::string &header, const nlohmann::json &apps)
{
	std::cout << fmt::format("{}: {} application{}\n", header, apps.size(),
				 apps.size() == 1 ? "" : "s");
	for (const nlohmann::json &app : apps)
		printApp(app);
}

// Each application's id also under "app", the key `force --json`, `timeline --json` and the events use; "id" stays
// (the agent's apps_reply, and scripts that read it).
nlohmann::json withAppKey(nlohmann::json apps)
{
	for (nlohmann::json &app : apps)
		if (app.is_object() && app.contains("id"))
			app["app"] = app["id"];
	return apps;
}

} // namespace

int appsCommand(const GlobalOptions &options, bool json)
{
	Failure failure;
	std::optional<std::vector<Target>> targets = watchTargets(options, failure);
	if (!targets)
		return report(failure);
	// One agent named, or none and no cluster up: its reply as it is. Otherwise every node of
	// the cluster.
	const bool named =
	    !options.agent.empty() || !options.node.empty() || std::getenv("MALLEO_AGENT");
	Failure ignored;
	const bool cluster = !named && readClusterFile(clusterDir(options), ignored).has_value();
	std::vector<AgentApps> answers = askApps(*targets, options.timeout);
	std::vector<std::string> silent;
	const AgentApps *first = nullptr;
	for (const AgentApps &a : answers) {
		if (!a.problem.line.empty())
			silent.push_back(a.node);
		else if (!first)
			first = &a;
	}
	if (!first)
		return report(answers.front().problem);

	if (!cluster) {
		nlohmann::json apps = mergeApps({*first})["apps"];
		if (json) {
			nlohmann::json out = {{"agent", first->agent}, {"apps", withAppKey(first->apps)}};
			std::cout << out.dump(2, ' ', false,
					      nlohmann::json::error_handler_t::replace)
				  << '\n';
		} else {
			printApps("agent " + first->agent, apps);
		}
		return kExitOk;
	}
	// Nodes that did not answer are one line, once: their processes are missing, the rest is
	// right.
	for (const AgentApps &a : answers)
		if (!a.problem.line.empty())
			report({kExitOk,
				fmt::format(
				    "warning: {} did not answer, its processes are not shown: {}",
				    a.node, a.problem.line)});
	nlohmann::json merged = mergeApps(answers);
	if (json) {
		merged["apps"] = withAppKey(merged["apps"]);
		std::cout << merged.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
			  << '\n';
		return kExitOk;
	}
	std::string nodes;
	for (const AgentApps &a : answers)
		if (a.problem.line.empty())
			nodes += (nodes.empty() ? "" : ", ") + a.node;
	printApps(fmt::format("{} node{} ({})", answers.size() - silent.size(),
			      answers.size() - silent.size() == 1 ? "" : "s", nodes),
		  merged["apps"]);
	return kExitOk;
}

} // namespace malleo::cli
