// SPDX-License-Identifier: Apache-2.0
// The Prometheus text of agent/src/metrics.cpp: well-formed exposition, the values of the core's state, the
// counters' families, and every family documented in docs/deployment.md.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core_harness.h"
#include "metrics.h"

using namespace malleo;
using namespace malleo::test;

namespace {

// The value of the series `series` (name and labels exactly as written), or "" when the text has none.
std::string valueOf(const std::string &text, const std::string &series)
{
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);)
		if (line.starts_with(series + " "))
			return line.substr(series.size() + 1);
	return {};
}

// Checks the exposition format (version 0.0.4) line by line: HELP and TYPE once per family before its samples,
// samples of a family together, names and labels as the format allows, values numbers.
void checkWellFormed(const std::string &text)
{
	static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) \S.*)");
	static const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge))");
	static const std::regex sample(
		R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*")"
		R"((,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*")*\})? )"
		R"((NaN|[+-]Inf|-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?))");
	REQUIRE(!text.empty());
	CHECK(text.back() == '\n');
	std::set<std::string> typed, finished;
	std::string current, helped;
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);) {
		std::smatch m;
		INFO(line);
		if (std::regex_match(line, m, help)) {
			helped = m[1];
		} else if (std::regex_match(line, m, type)) {
			CHECK(m[1] == helped);
			CHECK(typed.insert(m[1]).second);
			if (!current.empty())
				finished.insert(current);
			current = m[1];
		} else {
			REQUIRE(std::regex_match(line, m, sample));
			CHECK(m[1] == current);
			CHECK(!finished.count(m[1]));
			if (line.find("_total") != std::string::npos)
				CHECK(std::string(m[1]).ends_with("_total"));
		}
	}
}

Message request(const char *type, nlohmann::json fields)
{
	Message m = makeMessage(type, "rank", 1);
	m.update(fields);
	return m;
}

} // namespace

TEST_SUITE("metrics")
{
	TEST_CASE("two joined agents: peers, node profile and message counters as the core has them")
	{
		TestNetwork net;
		net.add(agentConfig("a"));
		net.add(agentConfig("b", {"a"}));
		net.run(3.0);
		REQUIRE(connected(net, {"a", "b"}));
		Core &a = *net.node("a").core;
		NodeProfile profile;
		profile.pw = 4;
		profile.apw = 0.25;
		profile.upw = 0.75;
		profile.cores = 4;
		a.setLocalProfile(profile);

		const std::string text = prometheusText(a, net.now());
		checkWellFormed(text);
		CHECK(valueOf(text, "malleo_peers") == "1");
		CHECK(valueOf(text, "malleo_agent_joined") == "1");
		CHECK(valueOf(text, "malleo_agent_draining") == "0");
		CHECK(!valueOf(text, R"(malleo_peer_last_heard_seconds{peer="b"})").empty());
		CHECK(valueOf(text, "malleo_node_power") == "4");
		CHECK(valueOf(text, "malleo_node_cpu_available_ratio") == "0.25");
		CHECK(valueOf(text, "malleo_node_cores") == "4");
		CHECK(valueOf(text, "malleo_applications") == "0");
		const uint64_t hellos = a.counters().get("rx.hello");
		REQUIRE(hellos > 0);
		CHECK(valueOf(text, R"(malleo_messages_received_total{channel="peer",type="hello"})") ==
		      std::to_string(hellos));
		CHECK(valueOf(text, R"(malleo_messages_sent_total{type="heartbeat"})") ==
		      std::to_string(a.counters().get("tx.heartbeat")));
		CHECK(valueOf(text, R"(malleo_membership_events_total{event="joined"})") ==
		      std::to_string(a.counters().get("peers.joined")));

		// Counters move between two scrapes, as the core's do.
		net.run(2.0);
		const std::string later = prometheusText(a, net.now());
		CHECK(std::stoull(valueOf(later, R"(malleo_messages_sent_total{type="heartbeat"})")) >
		      std::stoull(valueOf(text, R"(malleo_messages_sent_total{type="heartbeat"})")));
	}

	TEST_CASE("an application: its size, its processes here by state, units and the last iteration time")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		for (uint32_t rank : {0u, 1u, 2u})
			REQUIRE(core.onLocalRequest(request("register", {{"app", "heat"}, {"rank", rank},
									 {"pid", 100 + rank}, {"size", 2},
									 {"malleable", true}, {"units", 3}}),
						    net.now(), out)["type"] == "ack");
		REQUIRE(core.onLocalRequest(request("app_report", {{"app", "heat"}, {"rank", 2}, {"active", false}}),
					    net.now(), out)["type"] == "ack");
		REQUIRE(core.onLocalRequest(request("app_report", {{"app", "heat"}, {"rank", 0}, {"size", 2},
								   {"iteration_times", {0.25, 0.25}}}),
					    net.now(), out)["type"] == "ack");

		const std::string text = prometheusText(core, net.now());
		checkWellFormed(text);
		CHECK(valueOf(text, "malleo_applications") == "1");
		CHECK(valueOf(text, R"(malleo_app_info{app="heat",root_agent="a"})") == "1");
		CHECK(valueOf(text, R"(malleo_app_size{app="heat"})") == "2");
		CHECK(valueOf(text, R"(malleo_app_local_processes{app="heat",state="active"})") == "2");
		CHECK(valueOf(text, R"(malleo_app_local_processes{app="heat",state="parked"})") == "1");
		CHECK(valueOf(text, R"(malleo_app_local_units{app="heat"})") == "9");
		CHECK(valueOf(text, R"(malleo_app_iteration_seconds{app="heat"})") == "0.25");
		CHECK(valueOf(text, R"(malleo_app_command_pending{app="heat"})") == "0");
		CHECK(valueOf(text, R"(malleo_app_events_total{event="processes_registered"})") == "3");
		CHECK(valueOf(text, R"(malleo_messages_received_total{channel="local",type="register"})") == "3");
	}

	TEST_CASE("counters go to the family of their prefix; label values are escaped")
	{
		const nlohmann::json status = {
			{"agent", {{"id", "n\"1\\"}, {"endpoint", "tcp://h:1"}, {"uptime", 2.5}}},
			{"counters",
			 {{"rx.local.status", 3},
			  {"rx.remote.poll", 4},
			  {"rx.wrm", 5},
			  {"tx.wrm", 6},
			  {"rejected.peer.bad_header", 2},
			  {"rejected.local.unknown_type", 1},
			  {"wrm.sent", 7},
			  {"peers.dropped.timeout", 1},
			  {"commands.refused.busy", 8},
			  {"actions.transfer", 9},
			  {"sockets.closed_for_room", 10},
			  {"auth.refused.peer", 12},
			  {"something_new", 11}}}};
		const std::string text = prometheusText(status, nlohmann::json::object(), nlohmann::json::object());
		checkWellFormed(text);
		CHECK(valueOf(text, R"(malleo_messages_received_total{channel="local",type="status"})") == "3");
		CHECK(valueOf(text, R"(malleo_messages_received_total{channel="remote",type="poll"})") == "4");
		CHECK(valueOf(text, R"(malleo_messages_received_total{channel="peer",type="wrm"})") == "5");
		CHECK(valueOf(text, R"(malleo_messages_sent_total{type="wrm"})") == "6");
		CHECK(valueOf(text, R"(malleo_messages_rejected_total{channel="peer",reason="bad_header"})") == "2");
		CHECK(valueOf(text, R"(malleo_messages_rejected_total{channel="local",reason="unknown_type"})") == "1");
		CHECK(valueOf(text, R"(malleo_wrm_events_total{event="sent"})") == "7");
		CHECK(valueOf(text, R"(malleo_membership_events_total{event="dropped.timeout"})") == "1");
		CHECK(valueOf(text, R"(malleo_command_events_total{event="refused.busy"})") == "8");
		CHECK(valueOf(text, R"(malleo_action_events_total{event="transfer"})") == "9");
		CHECK(valueOf(text, R"(malleo_socket_events_total{event="closed_for_room"})") == "10");
		CHECK(valueOf(text, R"(malleo_other_events_total{counter="something_new"})") == "11");
		CHECK(valueOf(text, R"(malleo_auth_events_total{event="refused.peer"})") == "12");
		CHECK(valueOf(text, "malleo_agent_uptime_seconds") == "2.5");
		CHECK(text.find(R"(id="n\"1\\")") != std::string::npos);
		// What the documents do not hold is left out rather than written as 0.
		CHECK(valueOf(text, "malleo_peers").empty());
	}

	TEST_CASE("every metric family is documented in docs/deployment.md")
	{
		std::ifstream in(MALLEO_DEPLOYMENT_DOC);
		REQUIRE(in);
		std::stringstream doc;
		doc << in.rdbuf();
		for (std::string_view family : metricFamilies()) {
			INFO(family);
			CHECK(doc.str().find("| `" + std::string(family) + "` |") != std::string::npos);
		}
	}
}
