// SPDX-License-Identifier: Apache-2.0
// Membership alone (agent/src/membership.h): joins, heartbeats, failure detection and leaves, with the rest of the
// core replaced by hooks that record what it was asked.
#include <algorithm>

#include "component_harness.h"

using namespace malleo;
using namespace malleo::test;

TEST_SUITE("membership")
{
	TEST_CASE("a hello makes its sender a peer, is welcomed, and says joined and accepted once")
	{
		ComponentBench bench(agent("a"));
		Membership membership(bench.ctx, bench.protocol(), bench.membershipHooks());
		membership.start(100.0);
		membership.onHello(bench.from("hello", "b"), 100.0, bench.out);
		REQUIRE(membership.peers().count("b") == 1);
		CHECK(membership.peers().at("b").endpoint == "tcp://b");
		CHECK(membership.peers().at("b").inPeerView);
		CHECK(membership.joined());
		CHECK(bench.joined == 1);
		CHECK(bench.accepted == std::vector<std::string>{"b"});
		REQUIRE(bench.out.sends.size() == 1);
		CHECK(bench.out.sends[0].endpoint == "tcp://b");
		CHECK(bench.out.sends[0].message["type"] == "welcome");
		CHECK(contains(bench.eventTypes(), "peer_up"));
		CHECK(contains(bench.eventTypes(), "joined"));

		membership.onHello(bench.from("hello", "c"), 100.1, bench.out);
		CHECK(bench.joined == 1); // joined once
		CHECK(membership.peers().size() == 2);
	}

	TEST_CASE("a peer silent past the failure timeout is dropped at a tick, with peer_down and a disconnect")
	{
		ComponentBench bench(agent("a"));
		bench.ctx.config.failureTimeout = 2.0;
		Membership membership(bench.ctx, bench.protocol(), bench.membershipHooks());
		membership.start(100.0);
		membership.onHello(bench.from("hello", "b"), 100.0, bench.out);
		for (double t = 100.1; t < 102.0; t += 0.1)
			membership.tick(t, bench.out);
		CHECK(membership.peers().count("b") == 1);
		bench.out.clear();
		for (double t = 102.0; t < 102.5; t += 0.1)
			membership.tick(t, bench.out);
		CHECK(membership.peers().count("b") == 0);
		CHECK(contains(bench.eventTypes(), "peer_down"));
		CHECK(contains(bench.out.disconnects, "tcp://b"));
		CHECK(bench.ctx.counters.get("peers.dropped.timeout") == 1);
	}

	TEST_CASE("a hello naming an endpoint it may not connect to is refused through the hook, no peer made")
	{
		ComponentBench bench(agent("a"));
		Membership membership(bench.ctx, bench.protocol(), bench.membershipHooks());
		membership.start(100.0);
		Message hello = bench.from("hello", "b");
		hello["endpoint"] = "ipc:///run/user/1/malleo/agent.sock";
		membership.onHello(hello, 100.0, bench.out);
		CHECK(membership.peers().empty());
		CHECK(bench.rejected == std::vector<std::string>{"endpoint_refused"});
		CHECK(bench.out.sends.empty());
		CHECK(bench.joined == 0);
	}

	TEST_CASE("heartbeats that say draining mark the peer draining, the next one without it clears it")
	{
		ComponentBench bench(agent("a"));
		Membership membership(bench.ctx, bench.protocol(), bench.membershipHooks());
		membership.start(100.0);
		Message hb = bench.from("heartbeat", "b");
		hb["draining"] = true;
		CHECK(membership.onHeartbeat(hb, 100.0, bench.out) != nullptr);
		CHECK(membership.drainingPeers().count("b") == 1);
		CHECK(membership.onHeartbeat(bench.from("heartbeat", "b"), 100.5, bench.out) != nullptr);
		CHECK(membership.drainingPeers().empty());
	}

	TEST_CASE("a leave drops the peer at once; this agent's own leave tells every peer")
	{
		ComponentBench bench(agent("a"));
		Membership membership(bench.ctx, bench.protocol(), bench.membershipHooks());
		membership.start(100.0);
		membership.onHello(bench.from("hello", "b"), 100.0, bench.out);
		membership.onHello(bench.from("hello", "c"), 100.0, bench.out);
		membership.onLeave(bench.from("leave", "b"), 100.2, bench.out);
		CHECK(membership.peers().count("b") == 0);
		CHECK(bench.ctx.counters.get("peers.dropped.leave") == 1);
		bench.out.clear();
		membership.leave(100.3, bench.out);
		CHECK(bench.sentTypes() == std::vector<std::string>{"leave"});
		CHECK(bench.out.sends[0].endpoint == "tcp://c");
		CHECK(bench.eventTypes() == std::vector<std::string>{"leaving"});
	}
}
