// SPDX-License-Identifier: Apache-2.0
// The registry of local MPI processes: register, report, deregister, and what
// a decision module sees of it.
#include <algorithm>

#include "core_harness.h"

using namespace malleo;
using namespace malleo::test;

namespace {

Message request(const char *type, nlohmann::json fields)
{
	Message m = makeMessage(type, "rank", 1);
	m.update(fields);
	return m;
}

// Registers ranks 0..size-1 of `app` as the profiler does (not known to be malleable).
void registerRanks(Core &core, double now, const std::string &app, uint32_t size, uint32_t first = 0)
{
	CoreOutputs out;
	for (uint32_t rank = first; rank < size; ++rank)
		REQUIRE(core.onLocalRequest(request("register", {{"app", app}, {"rank", rank}, {"pid", 100 + rank},
								  {"size", size}, {"malleable", false}}),
					    now, out)["type"] == "ack");
}

Message force(Core &core, double now, nlohmann::json fields, CoreOutputs &out)
{
	return core.onLocalRequest(request("force", std::move(fields)), now, out);
}

Message poll(Core &core, double now, const std::string &app, CoreOutputs &out, uint32_t size = 2)
{
	return core.onLocalRequest(request("poll", {{"app", app}, {"iteration", 7}, {"size", size}}), now, out);
}

std::vector<std::string> eventTypes(const CoreOutputs &out)
{
	std::vector<std::string> types;
	for (const nlohmann::json &e : out.events)
		types.push_back(e["type"].get<std::string>());
	return types;
}

} // namespace

TEST_SUITE("applications")
{
	TEST_CASE("processes register, report and leave; iteration times are kept per size")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		for (uint32_t rank : {0u, 1u}) {
			Message reply = core.onLocalRequest(
				request("register", {{"app", "heat"}, {"rank", rank}, {"pid", 100 + rank},
						     {"size", 2}, {"malleable", true}, {"units", 2}}),
				net.now(), out);
			CHECK(reply["type"] == "ack");
		}
		const ApplicationInfo &app = core.applications().at("heat");
		CHECK(app.rootAgent == "a");
		CHECK(app.local.size() == 2);
		CHECK(app.local[1].units == 2);

		Message report = request("app_report", {{"app", "heat"}, {"rank", 0},
							{"iteration_times", {1.0, 1.0}}, {"bytes_remote", 4096.0},
							{"cpu_share", 0.5}});
		CHECK(core.onLocalRequest(report, net.now(), out)["type"] == "ack");
		REQUIRE(app.sizes.size() == 1);
		CHECK(app.sizes[0].processes == 2);
		CHECK(app.sizes[0].seconds == doctest::Approx(1.0));
		CHECK(app.local[0].bytesRemote == 4096.0);

		// A new size starts a new sample; the old one is kept for the sweet-spot fit.
		report["size"] = 4;
		report["iteration_times"] = {0.6};
		core.onLocalRequest(report, net.now(), out);
		REQUIRE(app.sizes.size() == 2);
		CHECK(app.sizes[1].processes == 4);

		Message unknown = request("app_report", {{"app", "nosuch"}, {"rank", 0}});
		Message reply = core.onLocalRequest(unknown, net.now(), out);
		CHECK(reply["type"] == "error");
		CHECK(reply["code"] == "unknown_app");

		Message bad = request("register", {{"app", "heat"}, {"rank", -1}, {"pid", 1}, {"size", 1},
						   {"malleable", true}});
		CHECK(core.onLocalRequest(bad, net.now(), out)["code"] == "bad_field");

		for (uint32_t rank : {0u, 1u})
			core.onLocalRequest(request("deregister", {{"app", "heat"}, {"rank", rank}}), net.now(), out);
		CHECK(core.applications().empty());
		const std::vector<std::string> types = eventTypes(out);
		CHECK(std::find(types.begin(), types.end(), "app_gone") != types.end());
	}

	TEST_CASE("a process's CPU share is kept in the node's cores: on a quarter-core slice, 0.125 machine cores is 0.5")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		registerRanks(core, net.now(), "astro", 2);
		auto report = [&](uint32_t rank, double share) {
			REQUIRE(core.onLocalRequest(request("app_report", {{"app", "astro"}, {"rank", rank},
									   {"cpu_share", share}}),
						    net.now(), out)["type"] == "ack");
		};
		// A whole machine (no cpu_cores in the node's description: its cores are the machine's): as said.
		NodeProfile node;
		node.cores = 2;
		core.setLocalProfile(node);
		report(0, 0.75);
		CHECK(core.applications().at("astro").local[0].ownLoad == doctest::Approx(0.75));

		// A slice of a quarter core (`cores` 1): two processes that keep it busy used 0.125 machine cores each,
		// which is the whole slice, upw × cores = 1, with nothing of another application's on it.
		node.cores = 1;
		node.upw = 1.0;
		core.setLocalProfile(node);
		core.setNodeDescription({{"module", "host"}, {"cores", 1}, {"cpu_cores", 0.25}});
		report(0, 0.125);
		report(1, 0.125);
		const ApplicationInfo &app = core.applications().at("astro");
		CHECK(app.local[0].ownLoad == doctest::Approx(0.5));
		CHECK(app.local[0].ownLoad + app.local[1].ownLoad == doctest::Approx(node.upw * node.cores));
		// A slice of one and a half cores is 2 of the node's cores: 1.5 machine cores busy is both.
		node.cores = 2;
		core.setLocalProfile(node);
		core.setNodeDescription({{"cpu_cores", 1.5}});
		report(1, 1.5);
		CHECK(core.applications().at("astro").local[1].ownLoad == doctest::Approx(2.0));
	}
}

TEST_SUITE("commands")
{
	TEST_CASE("force, poll and result: one command per application, handed out once")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		registerRanks(core, net.now(), "heat", 5);

		// The profiler does not know whether the application is malleable; the bridge's poll does.
		Message refused = force(core, net.now(), {{"app", "heat"}, {"op", "split"}, {"count", 2}}, out);
		CHECK(refused["code"] == "not_malleable");
		Message none = poll(core, net.now(), "heat", out);
		CHECK(none["type"] == "command");
		CHECK(none["op"] == "none");
		CHECK(core.applications().at("heat").malleable);
		CHECK(core.applications().at("heat").totalProcesses == 2);
		// A rank registering late does not undo what the bridge said.
		registerRanks(core, net.now(), "heat", 5, 4);
		CHECK(core.applications().at("heat").malleable);
		CHECK(core.applications().at("heat").totalProcesses == 2);

		out.clear();
		Message queued = force(core, net.now(),
				       {{"app", "heat"}, {"op", "split"}, {"count", 2}, {"node", "n2"}, {"weights", {1, 1, 1, 3}}},
				       out);
		REQUIRE(queued["type"] == "force_reply");
		const uint64_t id = queued["command"].get<uint64_t>();
		CHECK(id > 0);
		Message busy = force(core, net.now(), {{"app", "heat"}, {"op", "merge"}, {"count", 1}}, out);
		CHECK(busy["code"] == "busy");

		Message command = poll(core, net.now() + 1, "heat", out);
		CHECK(command["type"] == "command");
		CHECK(command["command"] == id);
		CHECK(command["op"] == "split");
		CHECK(command["count"] == 2);
		CHECK(command["node"] == "n2");
		CHECK(command["weights"] == nlohmann::json({1, 1, 1, 3}));
		// In flight: not handed out twice, and still the application's one command.
		CHECK(poll(core, net.now() + 1, "heat", out)["op"] == "none");
		CHECK(force(core, net.now(), {{"app", "heat"}, {"op", "merge"}, {"count", 1}}, out)["code"] == "busy");
		Message apps = core.onLocalRequest(request("apps", nlohmann::json::object()), net.now() + 2, out);
		CHECK(apps["apps"][0]["command"]["state"] == "sent");
		CHECK(apps["apps"][0]["last_result"].is_null());

		// A result for another command changes nothing.
		Message stray = core.onLocalRequest(request("result", {{"app", "heat"}, {"command", id + 1}, {"ok", true}}),
						    net.now(), out);
		CHECK(stray["code"] == "unknown_command");

		Message ack = core.onLocalRequest(request("result", {{"app", "heat"}, {"command", id}, {"ok", true},
								     {"text", "split at iteration 7: 2 -> 4 processes"},
								     {"before", 2}, {"after", 4}, {"duration", 0.25},
								     {"bytes", 65536.0}}),
						  net.now() + 2, out);
		CHECK(ack["type"] == "ack");
		const ApplicationInfo &app = core.applications().at("heat");
		CHECK(app.totalProcesses == 4);
		CHECK(app.redistributionCost == doctest::Approx(0.25));
		CHECK(app.lastSplit == doctest::Approx(net.now() + 2));
		apps = core.onLocalRequest(request("apps", nlohmann::json::object()), net.now() + 2, out);
		CHECK(apps["apps"][0]["command"].is_null());
		const nlohmann::json &last = apps["apps"][0]["last_result"];
		CHECK(last["command"] == id);
		CHECK(last["ok"] == true);
		CHECK(last["after"] == 4);
		CHECK(last["bytes"] == 65536.0);
		CHECK(eventTypes(out) ==
		      std::vector<std::string>{"command_queued", "command_sent", "command_result", "reconf_result"});
		CHECK(core.counters().get("commands.queued") == 1);
		CHECK(core.counters().get("commands.sent") == 1);
		CHECK(core.counters().get("commands.ok") == 1);
		CHECK(core.counters().get("commands.refused.busy") == 2);
		CHECK(core.counters().get("commands.unknown_results") == 1);

		// The slot is free: the next command gets a new id; a failed result is kept as the last one.
		Message next = force(core, net.now(), {{"app", "heat"}, {"op", "merge"}, {"count", 1}}, out);
		REQUIRE(next["type"] == "force_reply");
		CHECK(next["command"].get<uint64_t>() > id);
		Message merge = poll(core, net.now(), "heat", out, 4);
		core.onLocalRequest(request("result", {{"app", "heat"}, {"command", merge["command"]}, {"ok", false},
						       {"text", "merge at iteration 9 failed: refused"}}),
				    net.now(), out);
		CHECK(core.counters().get("commands.failed") == 1);
		CHECK(core.applications().at("heat").totalProcesses == 4);
		apps = core.onLocalRequest(request("apps", nlohmann::json::object()), net.now(), out);
		CHECK(apps["apps"][0]["last_result"]["ok"] == false);
	}

	TEST_CASE("coordinators on other nodes poll and report on the remote endpoint, and do nothing else there")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		registerRanks(core, net.now(), "heat", 2);
		REQUIRE(poll(core, net.now(), "heat", out)["op"] == "none");
		REQUIRE(force(core, net.now(), {{"app", "heat"}, {"op", "merge"}, {"count", 1}}, out)["type"] ==
			"force_reply");

		// The coordinator polled here; once its polls stop for 30 s (it moved off the node by MALLEO_FORCE), one on
		// another node takes the seat (coordinator_seat_test.cpp has the rest of who may poll).
		const Requester b{false, "b", "connection"};
		Message command = core.onRemoteRequest(request("poll", {{"app", "heat"}, {"iteration", 9}, {"size", 2}}),
						       b, net.now() + 31, out);
		REQUIRE(command["type"] == "command");
		CHECK(command["op"] == "merge");
		Message ack = core.onRemoteRequest(request("result", {{"app", "heat"}, {"command", command["command"]},
								      {"ok", true}, {"before", 2}, {"after", 1}}),
						   b, net.now() + 31, out);
		CHECK(ack["type"] == "ack");
		CHECK(core.counters().get("commands.ok") == 1);
		CHECK(core.counters().get("rx.remote.poll") == 1);
		CHECK(core.counters().get("rx.remote.result") == 1);

		// Registering, forcing and looking stay on the node: valid requests refused without touching the registry.
		const std::vector<Message> others = {
			request("force", {{"app", "heat"}, {"op", "split"}, {"count", 1}}),
			request("register", {{"app", "heat"}, {"rank", 5}, {"pid", 9}, {"size", 6}, {"malleable", true}}),
			request("deregister", {{"app", "heat"}, {"rank", 0}}),
			request("apps", nlohmann::json::object()),
			request("status", nlohmann::json::object()),
			request("events", nlohmann::json::object()),
			request("heartbeat", nlohmann::json::object()),  // a peer's type: not for this endpoint either
		};
		for (const Message &other : others) {
			out.clear();
			Message refused = core.onRemoteRequest(other, b, net.now(), out);
			CHECK(refused["type"] == "error");
			CHECK(refused["code"] == "local_only");
			CHECK(eventTypes(out) == std::vector<std::string>{"rejected"});
		}
		CHECK(core.counters().get("rejected.remote.local_only") == 7);
		CHECK(core.applications().at("heat").local.size() == 2);
		CHECK(core.onLocalRequest(request("apps", nlohmann::json::object()), net.now(), out)["apps"][0]["command"]
			      .is_null());
		// A bad envelope is told as such, as on the local endpoint.
		CHECK(core.onRemoteRequest(nlohmann::json::array(), b, net.now(), out)["code"] == "bad_envelope");
		CHECK(core.counters().get("rejected.remote.bad_envelope") == 1);
	}

	TEST_CASE("the remaining iterations a poll carries reach the decision modules and `apps`")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		registerRanks(core, net.now(), "heat", 5);
		CHECK(core.applications().at("heat").remainingIterations == -1);
		poll(core, net.now(), "heat", out);
		CHECK(core.applications().at("heat").remainingIterations == -1);
		Message apps = core.onLocalRequest(request("apps", nlohmann::json::object()), net.now(), out);
		CHECK(apps["apps"][0]["remaining_iterations"].is_null());
		CHECK(apps["apps"][0]["redistribution_cost"].is_null());
		Message none = core.onLocalRequest(
		    request("poll", {{"app", "heat"}, {"iteration", 8}, {"size", 2}, {"remaining", 92}}), net.now(), out);
		CHECK(none["op"] == "none");
		CHECK(core.applications().at("heat").remainingIterations == 92);
		// A poll that does not say keeps what the last one said.
		poll(core, net.now(), "heat", out);
		CHECK(core.applications().at("heat").remainingIterations == 92);
		apps = core.onLocalRequest(request("apps", nlohmann::json::object()), net.now(), out);
		CHECK(apps["apps"][0]["remaining_iterations"] == 92);
		// Not a count: refused by the schema, nothing changed.
		for (const nlohmann::json &bad : {nlohmann::json(-1), nlohmann::json("many"), nlohmann::json(1.5),
						  nlohmann::json(uint64_t{1} << 41)}) {
			Message refused = core.onLocalRequest(
			    request("poll", {{"app", "heat"}, {"iteration", 9}, {"size", 2}, {"remaining", bad}}), net.now(), out);
			CHECK(refused["type"] == "error");
			CHECK(core.applications().at("heat").remainingIterations == 92);
		}
	}

	TEST_CASE("force is validated and refused with a reason")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		registerRanks(core, net.now(), "heat", 2);
		poll(core, net.now(), "heat", out);

		auto code = [&](nlohmann::json fields) {
			return force(core, net.now(), std::move(fields), out)["code"].get<std::string>();
		};
		CHECK(code({{"app", "heat"}, {"op", "grow"}, {"count", 1}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "split"}, {"count", 0}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "split"}, {"count", -1}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "split"}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "split"}, {"count", "2"}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "merge"}, {"count", 1}, {"node", "n2"}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "split"}, {"count", 1}, {"node", ""}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "split"}, {"count", 1}, {"weights", {1, 0, 2}}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "split"}, {"count", 1}, {"weights", {1.5, 2}}}) == "bad_field");
		CHECK(code({{"app", "heat"}, {"op", "split"}, {"count", 1}, {"weights", "1,2"}}) == "bad_field");
		CHECK(code({{"app", "nosuch"}, {"op", "split"}, {"count", 1}}) == "unknown_app");
		Message bad = force(core, net.now(), {{"app", "heat"}, {"op", "grow"}, {"count", 1}}, out);
		CHECK(bad["text"].get<std::string>().find("split, merge or migrate") != std::string::npos);
		CHECK(core.counters().get("commands.queued") == 0);

		// Only the agent hosting rank 0 starts a reconfiguration.
		CoreOutputs ignored;
		core.onLocalRequest(request("register", {{"app", "far"}, {"rank", 3}, {"pid", 9}, {"size", 4},
							 {"malleable", true}}),
				    net.now(), ignored);
		CHECK(code({{"app", "far"}, {"op", "split"}, {"count", 1}}) == "not_root");
		CHECK(poll(core, net.now(), "nosuch", out)["code"] == "unknown_app");
	}

	TEST_CASE("an application whose rank 0 deregisters drops its command")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		registerRanks(core, net.now(), "heat", 2);
		poll(core, net.now(), "heat", out);
		Message queued = force(core, net.now(), {{"app", "heat"}, {"op", "split"}, {"count", 1}}, out);
		REQUIRE(queued["type"] == "force_reply");
		out.clear();
		core.onLocalRequest(request("deregister", {{"app", "heat"}, {"rank", 0}}), net.now(), out);
		CHECK(eventTypes(out) == std::vector<std::string>{"command_dropped", "reconf_result"});
		CHECK(core.counters().get("commands.dropped") == 1);
		// Nothing is handed out, and a late result is not taken for it.
		CHECK(poll(core, net.now(), "heat", out)["op"] == "none");
		CHECK(core.onLocalRequest(request("result", {{"app", "heat"}, {"command", queued["command"]},
							     {"ok", true}}),
					  net.now(), out)["code"] == "unknown_command");
		core.onLocalRequest(request("deregister", {{"app", "heat"}, {"rank", 1}}), net.now(), out);
		CHECK(core.applications().empty());
	}
}
