// SPDX-License-Identifier: Apache-2.0
// The core's state machine driven without sockets: membership, failure
// detection, WRM forwarding, TTL expiry and retries with backoff.
#include <set>

#include "core_harness.h"

using namespace malleo;
using namespace malleo::test;

namespace {

NodeProfile loaded(double upw)
{
	NodeProfile p;
	p.upw = upw;
	p.apw = 1.0 - upw;
	return p;
}

// A chain a0 - a1 - ... - a(n-1): each seeds the previous, views of one peer and
// no gossip or shuffle, so the only path between the ends is the chain itself.
TestNetwork &chain(TestNetwork &net, int n, unsigned ttl)
{
	nlohmann::json p2p = {{"view_size", 1}, {"shuffle_interval", 0}, {"gossip_fanout", 0}};
	for (int i = 0; i < n; ++i) {
		CoreConfig c = agentConfig("a" + std::to_string(i));
		if (i > 0)
			c.seeds = {"tcp://a" + std::to_string(i - 1)};
		c.wrmEnabled = i == 0; // only the idle end asks for work
		c.wrmOnJoin = false;
		c.ttl = ttl;
		c.wrmTimeout = 1.0;
		c.backoffInitial = 1.0;
		c.backoffMax = 4.0;
		c.gossipInterval = 0;
		TestNode &node = net.add(c, "p2p", p2p);
		node.core->setLocalProfile(loaded(i == n - 1 ? 0.95 : 0.1));
	}
	return net;
}

} // namespace

TEST_SUITE("core")
{
	TEST_CASE("two agents join and list each other")
	{
		TestNetwork net;
		net.add(agentConfig("a"));
		net.add(agentConfig("b", {"a"}));
		net.run(1.0);
		CHECK(net.node("a").core->peers().count("b") == 1);
		CHECK(net.node("b").core->peers().count("a") == 1);
		CHECK(net.node("b").eventsOf("joined").size() == 1);
		CHECK(net.node("a").counters().get("rx.hello") == 1);
		CHECK(net.node("b").counters().get("rx.welcome") == 1);
	}

	TEST_CASE("a full peer table evicts the peer heard from longest ago outside the view, never one in it")
	{
		TestNetwork net;
		CoreConfig config = agentConfig("a");
		config.maxPeers = 3;
		net.add(config, "p2p", {{"view_size", 1}});
		auto hello = [&](const std::string &id) {
			Message m = makeMessage("hello", id, 1);
			m["endpoint"] = "tcp://" + id;
			m["agent_version"] = "1";
			m["profile"] = toJson(NodeProfile{});
			net.inject("a", encodeMessage(m, 1));
			net.run(0.1);
		};
		for (int i = 0; i < 8; ++i)
			hello("x" + std::to_string(i));
		const auto &peers = net.node("a").core->peers();
		CHECK(peers.size() == 3);
		CHECK(peers.count("x7") == 1);
		CHECK(net.node("a").counters().get("peers.joined") == 8);
		CHECK(net.node("a").counters().get("peers.dropped.evicted") == 5);
		// The one peer of a's view stays however old; the others are the ones heard from last.
		int inView = 0;
		for (const auto &[id, peer] : peers) {
			inView += peer.inView;
			CHECK((peer.inView || id >= "x6"));
		}
		CHECK(inView == 1);
	}

	TEST_CASE("sixteen agents with one seed each form one connected overlay with bounded views")
	{
		TestNetwork net;
		std::vector<std::string> ids;
		for (int i = 0; i < 16; ++i) {
			ids.push_back("n" + std::to_string(i));
			net.add(agentConfig(ids.back(), i ? std::vector<std::string>{"n" + std::to_string(i / 2)}
							  : std::vector<std::string>{}),
				"p2p", {{"view_size", 4}});
		}
		net.run(3.0);
		CHECK(connected(net, ids));
		for (const std::string &id : ids) {
			int inView = 0;
			for (const auto &[peer, entry] : net.node(id).core->peers())
				inView += entry.inView;
			CHECK(inView <= 4);
			CHECK(inView >= 1);
		}
	}

	TEST_CASE("a silent peer is dropped within the failure timeout plus a tick")
	{
		TestNetwork net;
		for (const char *id : {"a", "b", "c"}) {
			CoreConfig c = agentConfig(id, std::string(id) == "a" ? std::vector<std::string>{}
									      : std::vector<std::string>{"a"});
			c.failureTimeout = 2.0;
			net.add(c);
		}
		net.run(2.0);
		REQUIRE(net.node("b").core->peers().count("a") == 1);
		net.node("a").up = false;
		double killedAt = net.now();
		net.run(2.0 + 0.5 + 0.2);
		for (const char *id : {"b", "c"}) {
			CHECK(net.node(id).core->peers().count("a") == 0);
			auto down = net.node(id).eventsOf("peer_down");
			REQUIRE(down.size() >= 1);
			CHECK(down.back()["peer"] == "a");
			// t is relative to the start at 100.0.
			CHECK(down.back()["t"].get<double>() + 100.0 <= killedAt + 2.0 + 0.5 + 0.1 + 1e-6);
		}
	}

	TEST_CASE("an agent that did not run for longer than the failure timeout keeps its peers")
	{
		TestNetwork net;
		for (const char *id : {"a", "b"}) {
			CoreConfig c = agentConfig(id, std::string(id) == "a" ? std::vector<std::string>{}
									      : std::vector<std::string>{"a"});
			c.failureTimeout = 2.0;
			net.add(c);
		}
		net.run(2.0);
		REQUIRE(net.node("a").core->peers().count("b") == 1);
		// a's next tick comes 5 s after its last (SIGSTOP, SIGCONT): b's silence is a's own.
		CoreOutputs out;
		net.node("a").core->tick(net.now() + 5.0, out);
		CHECK(net.node("a").core->peers().count("b") == 1);
		CHECK(net.node("a").counters().get("agent.stalls") == 1);
		// Still silent, ticking as usual: b is dropped a timeout later, not before.
		double t = net.now() + 5.0;
		for (; t < net.now() + 6.0; t += 0.1)
			net.node("a").core->tick(t, out);
		CHECK(net.node("a").core->peers().count("b") == 1);
		for (; t < net.now() + 7.3; t += 0.1)
			net.node("a").core->tick(t, out);
		CHECK(net.node("a").core->peers().count("b") == 0);
		CHECK(net.node("a").counters().get("agent.stalls") == 1);
	}

	TEST_CASE("ticks configured further apart than the failure timeout are no stall")
	{
		TestNetwork net;
		for (const char *id : {"a", "b"}) {
			CoreConfig c = agentConfig(id, std::string(id) == "a" ? std::vector<std::string>{}
									      : std::vector<std::string>{"a"});
			c.failureTimeout = 2.0;
			net.add(c);
		}
		net.run(12.0, 3.0);
		CHECK(net.node("a").counters().get("agent.stalls") == 0);
		CHECK(net.node("a").counters().get("peers.dropped.timeout") >= 1);
	}

	TEST_CASE("a WRM from the idle end reaches the loaded end several hops away and is answered")
	{
		TestNetwork net;
		chain(net, 6, 8);
		net.run(3.0);
		TestNode &origin = net.node("a0");
		auto replies = origin.eventsOf("wrm_reply");
		REQUIRE(replies.size() >= 1);
		CHECK(replies.front()["responder"] == "a5");
		CHECK(replies.front()["hops"] == 5);
		CHECK(origin.counters().get("wrm.answered") >= 1);
		for (int i = 1; i <= 4; ++i)
			CHECK(net.node("a" + std::to_string(i)).counters().get("wrm.forwarded") >= 1);
		CHECK(net.node("a5").counters().get("decisions.wrm_answer") >= 1);
		CHECK(net.node("a5").eventsOf("wrm_answered").front()["reasons"]["local_upw"] == 0.95);
	}

	TEST_CASE("a WRM whose TTL runs out is dropped and counted; the origin retries with backoff")
	{
		TestNetwork net;
		chain(net, 6, 2);
		net.run(12.0);
		CHECK(net.node("a0").counters().get("wrm.answered") == 0);
		CHECK(net.node("a2").counters().get("wrm.ttl_expired") >= 1);
		CHECK(net.node("a3").counters().get("rx.wrm") == 0);
		CHECK(net.node("a0").counters().get("wrm.retries") >= 2);

		// Sent at s0; unanswered at s0+1 → next at +1 (backoff 1), then +2, then +4.
		auto sent = net.node("a0").eventsOf("wrm_sent");
		REQUIRE(sent.size() >= 4);
		std::vector<double> gaps;
		for (std::size_t i = 1; i < sent.size(); ++i)
			gaps.push_back(sent[i]["t"].get<double>() - sent[i - 1]["t"].get<double>());
		// Each step may land up to two ticks late (one to notice, one to send).
		CHECK(std::abs(gaps[0] - 2.0) <= 0.21);
		CHECK(std::abs(gaps[1] - 3.0) <= 0.21);
		CHECK(std::abs(gaps[2] - 5.0) <= 0.21);
	}

	TEST_CASE("a forwarded WRM carries what its origin said it hosts, the checked keys only")
	{
		TestNetwork net;
		chain(net, 3, 8);
		net.run(1.0);
		Message wrm = makeMessage("wrm", "a0", 99);
		wrm.update({{"origin", "a0"}, {"origin_endpoint", "tcp://a0"}, {"origin_profile", toJson(NodeProfile{})},
			    {"wrm_id", 4242}, {"ttl", 3}, {"hops", 1}, {"visited", {"a0"}},
			    {"hosted", {{"heat", {{"units", 3}, {"load", 0.5}, {"note", "not passed on"}}}}}});
		net.inject("a1", encodeMessage(wrm, 1));
		std::vector<Message> forwarded;
		for (const auto &[endpoint, m] : net.sent("wrm"))
			if (endpoint == "tcp://a2" && m["wrm_id"] == 4242)
				forwarded.push_back(m);
		REQUIRE(forwarded.size() == 1);
		CHECK(forwarded[0]["hosted"] == nlohmann::json{{"heat", {{"units", 3}, {"load", 0.5}}}});
		CHECK(forwarded[0]["hops"] == 2);
	}

	TEST_CASE("malformed peer messages are rejected and counted, unknown types from a peer answered")
	{
		TestNetwork net;
		net.add(agentConfig("a"));
		net.add(agentConfig("b", {"a"}));
		net.run(1.0);
		TestNode &a = net.node("a");

		Message unknown = makeMessage("teleport", "b", 7);
		net.inject("a", encodeMessage(unknown, 1));
		CHECK(a.counters().get("rejected.peer.unknown_type") == 1);
		CHECK(net.sentTo("error") == std::vector<std::string>{"tcp://b"});

		Message newer = makeMessage("heartbeat", "b", 8);
		newer["v"] = 2;
		net.inject("a", encodeMessage(newer, 1));
		CHECK(a.counters().get("rejected.peer.newer_version") == 1);

		// A newer agent's hello is answered at the endpoint it names, naming both versions.
		Message futureHello = makeMessage("hello", "z", 1);
		futureHello.update({{"v", kSchemaVersion + 1}, {"endpoint", "tcp://z"}, {"agent_version", "9.0"},
				    {"profile", toJson(NodeProfile{})}});
		net.inject("a", encodeMessage(futureHello, 1));
		CHECK(net.sentTo("error") == std::vector<std::string>{"tcp://b", "tcp://b", "tcp://z"});

		Message noProfile = makeMessage("heartbeat", "b", 9);
		noProfile["endpoint"] = "tcp://b";
		net.inject("a", encodeMessage(noProfile, 1));
		CHECK(a.counters().get("rejected.peer.bad_field") == 1);

		Message badVisited = makeMessage("wrm", "b", 10);
		badVisited.update({{"origin", "b"}, {"origin_endpoint", "tcp://b"},
				   {"origin_profile", toJson(NodeProfile{})}, {"wrm_id", 1},
				   {"ttl", 3}, {"hops", 1}, {"visited", {1, 2}}});
		net.inject("a", encodeMessage(badVisited, 1));
		CHECK(a.counters().get("rejected.peer.bad_field") == 2);

		WireFrames garbage = encodeMessage(makeMessage("leave", "b", 11), 1);
		garbage.body.resize(garbage.body.size() / 2);
		net.inject("a", garbage);
		CHECK(a.counters().get("rejected.peer.undecodable") == 1);

		WireFrames magic = encodeMessage(makeMessage("leave", "b", 12), 1);
		magic.header[0] = 0x42;
		net.inject("a", magic);
		CHECK(a.counters().get("rejected.peer.bad_header") == 1);

		// Still a member: nothing above disturbed the overlay.
		CHECK(a.core->peers().count("b") == 1);
	}

	TEST_CASE("a graceful leave removes the agent at once")
	{
		TestNetwork net;
		net.add(agentConfig("a"));
		net.add(agentConfig("b", {"a"}));
		net.run(1.0);
		CoreOutputs out;
		net.node("b").core->leave(net.now(), out);
		for (CoreOutputs::Send &s : out.sends)
			net.inject("a", encodeMessage(s.message, 1));
		net.node("b").up = false;
		CHECK(net.node("a").core->peers().count("b") == 0);
		CHECK(net.node("a").counters().get("peers.dropped.leave") == 1);
	}

	TEST_CASE("hierarchical: members link to their leader, a WRM climbs to another group")
	{
		TestNetwork net;
		std::vector<std::string> ids;
		for (int i = 0; i < 8; ++i) {
			std::string id = "h" + std::to_string(i);
			ids.push_back(id);
			CoreConfig c = agentConfig(id, i ? std::vector<std::string>{"h0"} : std::vector<std::string>{});
			c.wrmEnabled = i == 1;
			c.wrmOnJoin = false;
			TestNode &n = net.add(c, "hierarchical", {{"group", i < 4 ? "left" : "right"}});
			n.core->setLocalProfile(loaded(i == 6 ? 0.9 : 0.1));
		}
		net.run(8.0);
		CHECK(connected(net, ids));
		// h1's leader is h0 (smallest id of "left"), and h0 links to the "right" leader h4.
		CHECK(net.node("h1").core->peers().at("h0").inView);
		CHECK(net.node("h0").core->peers().at("h4").inView);
		auto replies = net.node("h1").eventsOf("wrm_reply");
		REQUIRE(replies.size() >= 1);
		CHECK(replies.front()["responder"] == "h6");
	}
}
