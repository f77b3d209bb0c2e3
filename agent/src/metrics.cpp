// SPDX-License-Identifier: Apache-2.0
#include "metrics.h"

#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core.h"

namespace malleo {

namespace {

struct Family {
	std::string_view name;
	std::string_view type;
	std::string_view help;
};

// Every family, in the order a scrape lists them; docs/deployment.md has the same table with the labels.
constexpr Family kFamilies[] = {
	{"malleo_agent_info", "gauge",
	 "Always 1; the labels name the agent: id, endpoint, app_endpoint, version, profiling, protocol, decision"},
	{"malleo_agent_uptime_seconds", "gauge", "Seconds since the agent started"},
	{"malleo_agent_joined", "gauge", "1 once a peer has answered this agent, else 0"},
	{"malleo_agent_draining", "gauge", "1 while the agent drains its node before it leaves, else 0"},
	{"malleo_peers", "gauge", "Alive peers"},
	{"malleo_peers_in_view", "gauge", "Alive peers this agent chose for its view"},
	{"malleo_peer_candidates", "gauge", "Addresses learned through gossip that are not peers"},
	{"malleo_peer_last_heard_seconds", "gauge", "Seconds since the peer was last heard from"},
	{"malleo_peer_cpu_available_ratio", "gauge", "The peer's available CPU fraction (apw) as it last said"},
	{"malleo_wrm_outstanding", "gauge", "1 while a work request of this agent awaits its answer, else 0"},
	{"malleo_wrm_backoff_seconds", "gauge", "The wait before the next work request after unanswered ones"},
	{"malleo_node_power", "gauge", "The node's processing power pw: cores times per-core speed, relative units"},
	{"malleo_node_cpu_available_ratio", "gauge", "The node's available CPU fraction apw, 0 to 1"},
	{"malleo_node_cpu_used_ratio", "gauge", "The node's used CPU fraction upw, 0 to 1"},
	{"malleo_node_cpu_available_stddev", "gauge", "Standard deviation of apw over the last intervals (sigma)"},
	{"malleo_node_context_switches_per_second", "gauge", "The node's context switches per second"},
	{"malleo_node_cores", "gauge", "Cores the profiling module counts on the node"},
	{"malleo_node_processes", "gauge", "Registered MPI processes of malleable applications on the node"},
	{"malleo_applications", "gauge", "Applications with a process registered on this node"},
	{"malleo_app_info", "gauge", "Always 1; labels app and root_agent, the agent hosting its rank 0"},
	{"malleo_app_malleable", "gauge", "1 once the application's coordinator has polled for commands, else 0"},
	{"malleo_app_size", "gauge", "Active processes of the whole application"},
	{"malleo_app_local_processes", "gauge", "The application's processes on this node, by state (active, parked)"},
	{"malleo_app_local_units", "gauge", "Data units held by the application's processes on this node"},
	{"malleo_app_iteration_seconds", "gauge", "The application's iteration time at its current size (smoothed), as rank 0 reports it"},
	{"malleo_app_command_pending", "gauge", "1 while a command for the application is queued or in flight here"},
	{"malleo_messages_received_total", "counter", "Messages received, by channel (peer, local, remote) and type"},
	{"malleo_messages_sent_total", "counter", "Messages sent to peers, by type"},
	{"malleo_messages_rejected_total", "counter", "Messages refused, by channel and reason"},
	{"malleo_membership_events_total", "counter", "Peers joined, refused, dropped and unlinked, by event"},
	{"malleo_wrm_events_total", "counter", "Work requests sent, retried, forwarded, answered and lost, by event"},
	{"malleo_decision_events_total", "counter", "The decision module's answers to work requests and the results handed to it, by event"},
	{"malleo_action_events_total", "counter", "Actions of the decision module, by kind (event)"},
	{"malleo_request_events_total", "counter", "Reconfiguration requests to root agents, by event"},
	{"malleo_command_events_total", "counter", "Commands of the applications rooted here, by event"},
	{"malleo_result_events_total", "counter", "Reconfiguration results received, by event"},
	{"malleo_drain_events_total", "counter", "Drains started, finished and cut by their deadline, by event"},
	{"malleo_app_events_total", "counter", "Processes registered, reports received and processes found ended, by event"},
	{"malleo_socket_events_total", "counter",
	 "Outgoing sockets closed to make room, connections closed past their caps or at the descriptor limit, by event"},
	{"malleo_auth_events_total", "counter",
	 "CURVE handshakes refused for a key not allowed, and messages to peers whose key is unknown, by event"},
	{"malleo_other_events_total", "counter", "Any other counter of the agent, by its name (label counter)"},
};

// A counter `prefix.event` of the core goes to the family of its prefix, with the rest as its `event` label.
const std::map<std::string, std::string_view, std::less<>> kCounterFamilies = {
	{"peers", "malleo_membership_events_total"},   {"wrm", "malleo_wrm_events_total"},
	{"decisions", "malleo_decision_events_total"}, {"actions", "malleo_action_events_total"},
	{"requests", "malleo_request_events_total"},   {"commands", "malleo_command_events_total"},
	{"results", "malleo_result_events_total"},     {"drain", "malleo_drain_events_total"},
	{"apps", "malleo_app_events_total"},	       {"sockets", "malleo_socket_events_total"},
	{"auth", "malleo_auth_events_total"},
};

using Labels = std::vector<std::pair<std::string_view, std::string>>;

std::string escapeLabel(std::string_view value)
{
	std::string out;
	out.reserve(value.size());
	for (char c : value) {
		if (c == '\\')
			out += "\\\\";
		else if (c == '"')
			out += "\\\"";
		else if (c == '\n')
			out += "\\n";
		else
			out += c;
	}
	return out;
}

std::string formatNumber(double v)
{
	if (std::isnan(v))
		return "NaN";
	if (std::isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	return fmt::format("{}", v);
}

// A JSON value as a sample value; empty when it is none (missing, null, text).
std::string sampleValue(const nlohmann::json &v)
{
	if (v.is_boolean())
		return v.get<bool>() ? "1" : "0";
	if (v.is_number_unsigned())
		return std::to_string(v.get<uint64_t>());
	if (v.is_number_integer())
		return std::to_string(v.get<int64_t>());
	if (v.is_number())
		return formatNumber(v.get<double>());
	return {};
}

const nlohmann::json &field(const nlohmann::json &doc, std::string_view key)
{
	static const nlohmann::json none;
	if (!doc.is_object())
		return none;
	auto it = doc.find(key);
	return it == doc.end() ? none : *it;
}

std::string text(const nlohmann::json &v)
{
	return v.is_string() ? v.get<std::string>() : std::string();
}

class Exposition
{
public:
	void add(std::string_view family, const Labels &labels, const nlohmann::json &value)
	{
		addValue(family, labels, sampleValue(value));
	}

	void addValue(std::string_view family, const Labels &labels, const std::string &value)
	{
		if (value.empty())
			return;
		std::string line(family);
		if (!labels.empty()) {
			line += '{';
			for (std::size_t i = 0; i < labels.size(); ++i)
				line += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first,
						    escapeLabel(labels[i].second));
			line += '}';
		}
		samples_[family].push_back(line + ' ' + value + '\n');
	}

	std::string str() const
	{
		std::string out;
		for (const Family &f : kFamilies) {
			auto it = samples_.find(f.name);
			if (it == samples_.end())
				continue;
			out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
			for (const std::string &line : it->second)
				out += line;
		}
		return out;
	}

private:
	std::map<std::string_view, std::vector<std::string>> samples_;
};

void addCounter(Exposition &e, const std::string &name, const nlohmann::json &value)
{
	const std::size_t dot = name.find('.');
	const std::string_view prefix = std::string_view(name).substr(0, dot);
	const std::string rest = dot == std::string::npos ? std::string() : name.substr(dot + 1);
	if (prefix == "rx" || prefix == "rejected") {
		// rx.TYPE, rx.local.TYPE, rx.remote.TYPE; rejected.CHANNEL.REASON
		std::string channel = "peer", what = rest;
		const std::size_t second = rest.find('.');
		if (prefix == "rejected" && second != std::string::npos) {
			channel = rest.substr(0, second);
			what = rest.substr(second + 1);
		} else if (prefix == "rx" && (rest.starts_with("local.") || rest.starts_with("remote."))) {
			channel = rest.substr(0, second);
			what = rest.substr(second + 1);
		}
		if (prefix == "rx")
			e.add("malleo_messages_received_total", {{"channel", channel}, {"type", what}}, value);
		else
			e.add("malleo_messages_rejected_total", {{"channel", channel}, {"reason", what}}, value);
		return;
	}
	if (prefix == "tx") {
		e.add("malleo_messages_sent_total", {{"type", rest}}, value);
		return;
	}
	if (auto it = kCounterFamilies.find(prefix); it != kCounterFamilies.end() && !rest.empty()) {
		e.add(it->second, {{"event", rest}}, value);
		return;
	}
	e.add("malleo_other_events_total", {{"counter", name}}, value);
}

} // namespace

std::string prometheusText(const nlohmann::json &status, const nlohmann::json &peers, const nlohmann::json &apps)
{
	Exposition e;
	const nlohmann::json &agent = field(status, "agent");
	const nlohmann::json &modules = field(status, "modules");
	const auto moduleName = [&](std::string_view kind) { return text(field(field(modules, kind), "name")); };
	e.addValue("malleo_agent_info",
		   {{"id", text(field(agent, "id"))},
		    {"endpoint", text(field(agent, "endpoint"))},
		    {"app_endpoint", text(field(agent, "app_endpoint"))},
		    {"version", text(field(agent, "version"))},
		    {"profiling", moduleName("profiling")},
		    {"protocol", moduleName("protocol")},
		    {"decision", moduleName("decision")}},
		   "1");
	e.add("malleo_agent_uptime_seconds", {}, field(agent, "uptime"));
	e.add("malleo_agent_joined", {}, field(agent, "joined"));
	e.add("malleo_agent_draining", {}, field(agent, "draining"));

	const nlohmann::json &overlay = field(status, "peers");
	e.add("malleo_peers", {}, field(overlay, "alive"));
	e.add("malleo_peers_in_view", {}, field(overlay, "in_view"));
	e.add("malleo_peer_candidates", {}, field(overlay, "candidates"));
	for (const nlohmann::json &peer : field(peers, "peers")) {
		const Labels labels = {{"peer", text(field(peer, "id"))}};
		e.add("malleo_peer_last_heard_seconds", labels, field(peer, "last_heard"));
		e.add("malleo_peer_cpu_available_ratio", labels, field(field(peer, "profile"), "apw"));
	}
	const nlohmann::json &wrm = field(status, "wrm");
	e.add("malleo_wrm_outstanding", {}, field(wrm, "outstanding"));
	e.add("malleo_wrm_backoff_seconds", {}, field(wrm, "backoff"));

	const nlohmann::json &profile = field(status, "profile");
	e.add("malleo_node_power", {}, field(profile, "pw"));
	e.add("malleo_node_cpu_available_ratio", {}, field(profile, "apw"));
	e.add("malleo_node_cpu_used_ratio", {}, field(profile, "upw"));
	e.add("malleo_node_cpu_available_stddev", {}, field(profile, "sigma"));
	e.add("malleo_node_context_switches_per_second", {}, field(profile, "ctxsw"));
	e.add("malleo_node_cores", {}, field(profile, "cores"));
	e.add("malleo_node_processes", {}, field(profile, "procs"));

	const nlohmann::json &appList = field(apps, "apps");
	e.addValue("malleo_applications", {}, std::to_string(appList.is_array() ? appList.size() : 0));
	for (const nlohmann::json &app : appList) {
		const std::string id = text(field(app, "id"));
		const Labels labels = {{"app", id}};
		e.addValue("malleo_app_info", {{"app", id}, {"root_agent", text(field(app, "root_agent"))}}, "1");
		e.add("malleo_app_malleable", labels, field(app, "malleable"));
		e.add("malleo_app_size", labels, field(app, "size"));
		int64_t active = 0, parked = 0, units = 0;
		for (const nlohmann::json &p : field(app, "processes")) {
			(field(p, "active") == true ? active : parked) += 1;
			if (field(p, "units").is_number_integer())
				units += field(p, "units").get<int64_t>();
		}
		e.add("malleo_app_local_processes", {{"app", id}, {"state", "active"}}, active);
		e.add("malleo_app_local_processes", {{"app", id}, {"state", "parked"}}, parked);
		e.add("malleo_app_local_units", labels, units);
		const nlohmann::json &times = field(app, "iteration_times");
		if (times.is_array() && !times.empty())
			e.add("malleo_app_iteration_seconds", labels, field(times.back(), "seconds"));
		e.add("malleo_app_command_pending", labels, !field(app, "command").is_null());
	}

	const nlohmann::json &counters = field(status, "counters");
	if (counters.is_object())
		for (const auto &[name, value] : counters.items())
			addCounter(e, name, value);
	return e.str();
}

std::string prometheusText(const Core &core, double now)
{
	return prometheusText(core.statusReply(now), core.peersReply(now), core.appsReply(now));
}

std::vector<std::string_view> metricFamilies()
{
	std::vector<std::string_view> names;
	for (const Family &f : kFamilies)
		names.push_back(f.name);
	return names;
}

} // namespace malleo
