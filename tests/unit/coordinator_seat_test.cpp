// SPDX-License-Identifier: Apache-2.0
// Who may take an application's commands and report their results (coordinator_seat.cpp), and what a result may say
// (result_check.cpp): another node's key neither takes a command nor has a result accepted (issue 46).
#include <algorithm>
#include <cmath>

#include "core_harness.h"
#include "result_check.h"

using namespace malleo;
using namespace malleo::test;

namespace {

Message request(const char *type, nlohmann::json fields)
{
	Message m = makeMessage(type, "malleo-pcm", 1);
	m.update(fields);
	return m;
}

const Requester kLocal{};

Command command(const char *op, int64_t count)
{
	Command c;
	REQUIRE(operationFromName(op, c.op));
	c.count = count;
	return c;
}

Requester remote(const std::string &node, const std::string &connection)
{
	return {false, node, connection};
}

struct Root {
	TestNetwork net;
	Core &core = *net.add(agentConfig("n1")).core;
	CoreOutputs out;
	double now = net.now();

	Root()
	{
		for (uint32_t rank : {0u, 1u})
			REQUIRE(core.onLocalRequest(request("register", {{"app", "heat"}, {"rank", rank}, {"pid", 100 + rank},
									  {"size", 2}, {"malleable", false}}),
						    now, out)["type"] == "ack");
	}
	Message ask(const Requester &from, const char *type, nlohmann::json fields)
	{
		Message m = request(type, std::move(fields));
		return from.local ? core.onLocalRequest(m, now, out) : core.onRemoteRequest(m, from, now, out);
	}
	Message poll(const Requester &from, int64_t size = 2)
	{
		return ask(from, "poll", {{"app", "heat"}, {"iteration", 7}, {"size", size}});
	}
	Message result(const Requester &from, uint64_t id, nlohmann::json fields)
	{
		fields["app"] = "heat";
		fields["command"] = id;
		return ask(from, "result", std::move(fields));
	}
	uint64_t force(nlohmann::json fields)
	{
		fields["app"] = "heat";
		Message reply = core.onLocalRequest(request("force", std::move(fields)), now, out);
		REQUIRE(reply["type"] == "force_reply");
		return reply["command"].get<uint64_t>();
	}
	nlohmann::json app()
	{
		return core.onLocalRequest(request("apps", nlohmann::json::object()), now, out)["apps"][0];
	}
	bool recorded(const char *type) const
	{
		return std::any_of(out.events.begin(), out.events.end(), [&](const nlohmann::json &e) { return e["type"] == type; });
	}
};

} // namespace

TEST_SUITE("coordinator_seat")
{
	TEST_CASE("another node's key takes no command from a coordinator polling here, and has no result accepted")
	{
		Root r;
		REQUIRE(r.poll(kLocal)["op"] == "none"); // the coordinator runs on this node
		const uint64_t split = r.force({{"op", "split"}, {"count", 2}});

		r.now += 0.1;
		Message taken = r.poll(remote("n2", "c2"));
		CHECK(taken["type"] == "error");
		CHECK(taken["code"] == "not_coordinator");
		CHECK(r.app()["command"]["state"] == "queued");
		CHECK(r.core.counters().get("commands.polls_refused.not_coordinator") == 1);
		// Nor does it say the application's size.
		CHECK(r.poll(remote("n2", "c2"), 64)["code"] == "not_coordinator");
		CHECK(r.core.applications().at("heat").totalProcesses == 2);

		// The real coordinator still gets it.
		Message command = r.poll(kLocal);
		REQUIRE(command["command"] == split);
		CHECK(command["op"] == "split");

		// A forged result from another node: refused, the command still in flight, nothing recorded.
		r.out.clear();
		const nlohmann::json forged = {{"ok", true},	{"before", 2}, {"after", 64},
					       {"duration", 1e300}, {"text", "\x1b]0;owned\x07\x1b[2J done"}};
		Message refused = r.result(remote("n2", "c2"), split, forged);
		CHECK(refused["code"] == "not_coordinator");
		CHECK(r.app()["command"]["state"] == "sent");
		CHECK(r.app()["last_result"].is_null());
		CHECK_FALSE(r.recorded("command_result"));
		CHECK(r.core.counters().get("commands.results_refused.not_coordinator") == 1);
		CHECK(r.core.counters().get("commands.ok") == 0);

		// The same numbers from the coordinator itself do not fit the command: refused, still in flight.
		CHECK(r.result(kLocal, split, forged)["code"] == "bad_result");
		CHECK(r.result(kLocal, split, {{"ok", true}, {"before", 2}, {"after", 4}, {"duration", 1e300}})["code"] ==
		      "bad_result");
		CHECK(r.result(kLocal, split, {{"ok", false}, {"before", 2}, {"after", 3}})["code"] == "bad_result");
		CHECK(r.result(kLocal, split, {{"ok", true}, {"bytes", -1.0}})["code"] == "bad_result");
		CHECK(r.core.counters().get("commands.results_refused.bad_result") == 4);
		CHECK(r.app()["command"]["state"] == "sent");
		CHECK_FALSE(r.recorded("command_result"));

		// Its true result is taken, its text without the terminal's controls.
		r.now += 0.5;
		Message ack = r.result(kLocal, split,
				       {{"ok", true}, {"before", 2}, {"after", 4}, {"duration", 0.4},
					{"text", "split \x1b[31mdone\x07\xc2\x9b"}});
		CHECK(ack["type"] == "ack");
		CHECK(r.app()["last_result"]["text"] == "split [31mdone");
		CHECK(r.core.applications().at("heat").totalProcesses == 4);
	}

	TEST_CASE("a coordinator on another node holds the seat on its connection; a migration or silence moves it")
	{
		Root r;
		REQUIRE(r.poll(kLocal)["op"] == "none");
		// A migration onto n3: the coordinator may be there afterwards (rank 0's slot moves only so).
		const uint64_t migrate = r.force({{"op", "migrate"}, {"count", 1}, {"node", "n3"}});
		REQUIRE(r.poll(kLocal)["command"] == migrate);
		REQUIRE(r.result(kLocal, migrate, {{"ok", true}, {"before", 2}, {"after", 2}})["type"] == "ack");
		r.now += 0.2;
		CHECK(r.poll(remote("n2", "c2"))["code"] == "not_coordinator"); // not where it went
		CHECK(r.poll(remote("n3", "a"))["type"] == "command");
		CHECK(r.core.counters().get("commands.coordinator_moved") == 1);

		// n3 on connection a holds it: another node is refused, a result from n3's other connection too.
		const uint64_t merge = r.force({{"op", "merge"}, {"count", 1}});
		r.now += 0.2;
		CHECK(r.poll(remote("n2", "c2"))["code"] == "not_coordinator");
		REQUIRE(r.poll(remote("n3", "a"))["command"] == merge);
		CHECK(r.poll(remote("n3", "b"))["code"] == "not_coordinator"); // in flight: its result comes first
		CHECK(r.result(remote("n3", "b"), merge, {{"ok", true}, {"before", 2}, {"after", 1}})["code"] ==
		      "not_coordinator");
		CHECK(r.result(remote("n2", "a"), merge, {{"ok", true}, {"before", 2}, {"after", 1}})["code"] ==
		      "not_coordinator");
		CHECK(r.result(remote("n3", "a"), merge, {{"ok", true}, {"before", 2}, {"after", 1}})["type"] == "ack");

		// n3's socket reconnected (a new connection, nothing in flight): still n3's seat.
		r.now += 0.2;
		CHECK(r.poll(remote("n3", "b"))["type"] == "command");
		// A coordinator silent for 30 s has left (it moved without a command of this agent's, by MALLEO_FORCE).
		r.now += 10;
		CHECK(r.poll(remote("n2", "c2"))["code"] == "not_coordinator");
		r.now += 25;
		CHECK(r.poll(remote("n2", "c2"))["type"] == "command");
		// A merge from a node may take rank 0's node's processes: any node may take the seat afterwards.
		r.now += 0.2;
		const uint64_t leave = r.force({{"op", "merge"}, {"count", 1}, {"from_node", "n2"}});
		REQUIRE(r.poll(remote("n2", "c2"))["command"] == leave);
		REQUIRE(r.result(remote("n2", "c2"), leave, {{"ok", true}, {"before", 2}, {"after", 1}})["type"] == "ack");
		r.now += 0.2;
		CHECK(r.poll(remote("n4", "d"))["type"] == "command");
		// This node's own processes may always take it.
		CHECK(r.poll(kLocal)["type"] == "command");
		CHECK(r.poll(remote("n4", "d"))["code"] == "not_coordinator");
	}

	TEST_CASE("without CURVE the seat is a connection's: the first to poll an unheld seat")
	{
		Root r;
		const Requester first = remote("", "x"), other = remote("", "y");
		REQUIRE(r.core.onLocalRequest(request("register", {{"app", "heat"}, {"rank", 0}, {"pid", 100},
									{"size", 2}, {"malleable", true}}),
					      r.now, r.out)["type"] == "ack");
		const uint64_t merge = r.force({{"op", "merge"}, {"count", 1}});
		REQUIRE(r.poll(first)["command"] == merge);
		CHECK(r.poll(other)["code"] == "not_coordinator");
		CHECK(r.result(other, merge, {{"ok", false}})["code"] == "not_coordinator");
		CHECK(r.result(first, merge, {{"ok", false}, {"text", "refused"}})["type"] == "ack");
		r.now += 0.1;
		CHECK(r.poll(other)["code"] == "not_coordinator"); // an unauthenticated node is no node: no reconnection
	}

	TEST_CASE("a command in flight at a restart takes its result from the node it was handed to")
	{
		Root r;
		r.poll(remote("n2", "c"));
		const uint64_t merge = r.force({{"op", "merge"}, {"count", 1}});
		REQUIRE(r.poll(remote("n2", "c"))["command"] == merge);
		const nlohmann::json journal = r.core.commandJournal();
		CHECK(journal["commands"]["heat"]["sent_to"] == nlohmann::json({{"local", false}, {"node", "n2"}}));

		Root next;
		REQUIRE(next.core.recoverCommands(journal, next.now, next.out).empty());
		CHECK(next.result(remote("n3", "c"), merge, {{"ok", true}, {"before", 2}, {"after", 1}})["code"] ==
		      "not_coordinator");
		CHECK(next.result(remote("n2", "new"), merge, {{"ok", true}, {"before", 2}, {"after", 1}})["type"] ==
		      "ack");
	}

	TEST_CASE("a result's text loses its control characters, whole characters kept")
	{
		CHECK(withoutControls("a\x1b[2Jb\r\n\tc\x7f", 100) == "a[2Jbc");
		CHECK(withoutControls("caf\xc3\xa9 \xe2\x86\x92 ok", 100) == "caf\xc3\xa9 \xe2\x86\x92 ok");
		CHECK(withoutControls("x\xc2\x9b" "1m\x9b" "2m\xff", 100) == "x1m2m");
		CHECK(withoutControls("ab\xe2\x86\x92", 3) == "ab");
		const Command split = command("split", 2);
		Message ok = {{"ok", true}, {"before", 3}, {"after", 5}, {"duration", 1.5}, {"bytes", 1e6}};
		CHECK_FALSE(checkResult(ok, split, 2.0));
		CHECK(checkResult(ok, split, 0.1)); // longer than the command has been out
		ok["duration"] = std::nan("");
		CHECK(checkResult(ok, split, 2.0));
		CHECK(checkResult({{"ok", true}, {"before", 3}, {"after", 5}}, command("merge", 2), 2.0));
		CHECK_FALSE(checkResult({{"ok", true}, {"before", 3}, {"after", 1}}, command("merge", 2), 2.0));
		CHECK(checkResult({{"ok", true}, {"before", 3}, {"after", 4}}, command("migrate", 1), 2.0));
		CHECK(checkResult({{"ok", true}, {"after", 0}}, command("merge", 1), 2.0));
	}

	// The component alone (agent/src/coordinator_seat.h), without a core around it.
	TEST_CASE("seats alone: the first poller holds the seat, another waits for its silence or a migration")
	{
		Counters counters;
		CoordinatorSeats seats(counters);
		const Requester a = remote("n2", "c1");
		const Requester b = remote("n3", "c1");
		CHECK(seats.refusal("app", a, 0, 10.0) == "");
		seats.take("app", a, 10.0);
		CHECK(seats.refusal("app", a, 0, 11.0) == "");
		CHECK(seats.refusal("app", kLocal, 0, 11.0) == ""); // this node's own processes always may
		CHECK(seats.refusal("app", remote("n2", "c2"), 0, 11.0) == ""); // its node on a new connection
		CHECK(seats.refusal("app", b, 0, 11.0).find("polls from node 'n2'") != std::string::npos);
		CHECK(seats.refusal("app", b, 0, 41.0) == ""); // silent past kSeatQuietMin
		CHECK(seats.refusal("app", remote("n2", "c2"), 4, 11.0).find("command 4 in flight") != std::string::npos);

		seats.open("app", command("migrate", 1)); // onto any node
		CHECK(seats.refusal("app", b, 0, 12.0) == "");
		seats.take("app", b, 12.0);
		CHECK(counters.get("commands.coordinator_moved") == 1);
		CHECK(seats.refusal("app", a, 0, 13.0) != "");

		seats.forget("app");
		CHECK(seats.refusal("app", a, 0, 13.0) == "");
	}

	TEST_CASE("seats alone: a result comes from the requester its command was handed to")
	{
		const Requester to = remote("n2", "c1");
		CHECK(CoordinatorSeats::resultRefusal(3, to, true, to) == "");
		CHECK(CoordinatorSeats::resultRefusal(3, to, false, remote("n9", "x")) == ""); // a journal that did not say
		CHECK(CoordinatorSeats::resultRefusal(3, remote("n2", ""), true, to) == ""); // any of that node's
		CHECK(CoordinatorSeats::resultRefusal(3, to, true, remote("n2", "c2")).find("on another connection") !=
		      std::string::npos);
		CHECK(CoordinatorSeats::resultRefusal(3, to, true, kLocal).find("command 3 was handed to node 'n2'") !=
		      std::string::npos);
	}
}
