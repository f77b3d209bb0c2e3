// SPDX-License-Identifier: Apache-2.0
// The "swap" decision module: which processes of an over-allocated application
// run, as the agent drives it. The policy math is tested in swap_policy_test.cpp.
#include <vector>

#include "core_harness.h"

using namespace malleo;
using namespace malleo::test;

namespace {

ModuleHandle swapModule(nlohmann::json table = nlohmann::json::object())
{
	ModuleLoadResult r = loadModule(ModuleKind::Decision, "swap", {});
	REQUIRE(r.error == "");
	REQUIRE(r.handle.get()->configure(table) == "");
	return std::move(r.handle);
}

ProcessInfo process(uint32_t rank, bool active, double ownLoad, double lastChange)
{
	ProcessInfo p;
	p.rank = rank;
	p.active = active;
	p.ownLoad = ownLoad;
	p.lastChange = lastChange;
	return p;
}

// This node: 4 cores of speed 2 (PW 8), a quarter busy with the application's
// own active rank 0; rank 1 is parked here. Its other active process runs on
// peer "p", one core of speed `peerSpeed`, fully busy with it.
struct Cluster {
	ModuleHandle h;
	NodeProfile local;
	std::vector<PeerEntry> peers;
	std::vector<ApplicationInfo> apps;
	double now = 1000.0;
	OverlayView overlay;

	Cluster(double peerSpeed,
		nlohmann::json table = {{"hysteresis", 0.1}, {"min_residence", 30}})
	    : h(swapModule(std::move(table)))
	{
		local.pw = 8.0;
		local.cores = 4;
		local.upw = 0.25;
		local.apw = 0.75;
		PeerEntry p;
		p.id = "p";
		p.profile.pw = peerSpeed;
		p.profile.cores = 1;
		p.profile.upw = 1.0;
		p.profile.processes = 1;
		peers.push_back(p);
		ApplicationInfo a;
		a.id = "heat";
		a.malleable = true;
		a.rootAgent = "j";
		a.totalProcesses = 2;
		a.local = {process(0, true, 1.0, 0.0), process(1, false, 0.0, 0.0)}; // one core of 4
		apps.push_back(a);
	}

	std::vector<Action> tick(double dt = 1.0)
	{
		overlay.self = "j";
		overlay.now = now += dt;
		overlay.alive = peers;
		overlay.local = &local;
		return static_cast<DecisionModule &>(*h.get()).onTick({overlay, apps});
	}
};

} // namespace

TEST_SUITE("swap_decision")
{
	TEST_CASE("no swap to a processor faster by less than the hysteresis")
	{
		// Here: 2 / (1 + 0.25 - 0.25) = 2. The peer: 1.9 / (1 + 1 - 1) = 1.9.
		// 2 < 1.9 * 1.1: the difference is noise, nobody moves.
		Cluster c(1.9);
		for (int k = 0; k < 100; ++k)
			CHECK(c.tick().empty());
	}

	TEST_CASE("two processes on one node never swap: the application's own load is not counted")
	{
		Cluster c(1.0);
		c.apps[0].totalProcesses = 1; // everything is here
		for (int k = 0; k < 100; ++k)
			CHECK(c.tick().empty());
	}

	TEST_CASE("a clearly faster processor: swap once the parked process's residence is over")
	{
		Cluster c(1.0);			       // the peer runs at 1, this node offers 2
		c.apps[0].local[1].lastChange = c.now; // rank 1 was just parked
		for (int k = 0; k < 29; ++k)
			CHECK(c.tick().empty());
		std::vector<Action> actions = c.tick();
		REQUIRE(actions.size() == 1);
		const Action &s = actions[0];
		CHECK(s.kind == "swap");
		CHECK(s.app == "heat");
		CHECK(s.params["activate"] == 1);
		CHECK(s.params["activate_agent"] == "j");
		CHECK(s.params["deactivate"].is_null());
		CHECK(s.params["deactivate_agent"] == "p");
		CHECK(s.reasons["fast_performance"].get<double>() == doctest::Approx(2.0));
		CHECK(s.reasons["slow_performance"].get<double>() == doctest::Approx(1.0));
		CHECK(s.reasons["hysteresis"] == 0.1);
		CHECK(s.reasons["fast"]["own_load"] == 0.25);

		// Proposed once: not again while the swap is under way.
		for (int k = 0; k < 29; ++k)
			CHECK(c.tick().empty());
		// Carried out: rank 1 runs here now, nothing left to swap.
		c.apps[0].local[1].active = true;
		c.apps[0].local[1].lastChange = c.now;
		c.apps[0].local[1].ownLoad = 1.0;
		c.local.upw = 0.5;
		c.peers[0].profile.processes = 0;
		for (int k = 0; k < 60; ++k)
			CHECK(c.tick().empty());
	}

	TEST_CASE("a spare on a node the application already fills is rated beside the processes it would join")
	{
		// This node's 4 cores all run the application (ranks 0, 2, 3, 4; UPW 1); rank 1 is parked. Activated,
		// it would be the fifth process on 4 cores: 2 x 4/5 = 1.6 each, not the 2 of an empty core (seed
		// 002's own-load exclusion, which rates the node as if the application were not on it). Against a
		// peer of speed 1.5, 1.6 is within the hysteresis: nobody moves.
		auto filled = [](Cluster &c) {
			c.local.upw = 1.0;
			c.local.apw = 0.0;
			c.apps[0].totalProcesses = 5;
			for (uint32_t rank : {2u, 3u, 4u})
				c.apps[0].local.push_back(process(rank, true, 1.0, 0.0));
		};
		Cluster c(1.5);
		filled(c);
		for (int k = 0; k < 60; ++k)
			CHECK(c.tick().empty());
		// Against a peer of speed 1, 1.6 is clearly faster: the swap comes, rated 1.6.
		Cluster slow(1.0);
		filled(slow);
		std::vector<Action> actions = slow.tick();
		REQUIRE(actions.size() == 1);
		CHECK(actions[0].params["activate"] == 1);
		CHECK(actions[0].params["deactivate_agent"] == "p");
		CHECK(actions[0].reasons["fast_performance"].get<double>() == doctest::Approx(1.6));
		// Three processes and a core of external work: the spare would be the fifth load on 4 cores, 2 x 4/5.
		Cluster loaded(1.0);
		loaded.local.upw = 1.0;
		loaded.apps[0].totalProcesses = 4;
		for (uint32_t rank : {2u, 3u})
			loaded.apps[0].local.push_back(process(rank, true, 1.0, 0.0));
		actions = loaded.tick();
		REQUIRE(actions.size() == 1);
		CHECK(actions[0].reasons["fast_performance"].get<double>() == doctest::Approx(2.0 * 4.0 / 5.0));
	}

	TEST_CASE("no parked process here: nothing to decide; WRMs are never answered")
	{
		Cluster c(1.0);
		c.apps[0].local[1].active = true;
		CHECK(c.tick().empty());
		WorkVerdict v = static_cast<DecisionModule &>(*c.h.get())
				    .onWorkRequest({c.overlay, c.apps}, {"i", {}, 3, 1, {}});
		CHECK_FALSE(v.answer);
		CHECK(v.reasons["module"] == "swap");
	}

	TEST_CASE("active side: a process on a loaded node goes to a spare on an idle peer, past "
		  "the hysteresis only")
	{
		// This node: one core of speed 1, fully busy: the application's rank 3 takes a
		// quarter, other work the rest (1 / (1 + 0.75) = 0.571). The peer: one core of
		// speed 1, `upw` busy, all of which a process activated there would compete with (1
		// / (1 + upw)).
		auto loaded = [](double peerUpw) {
			Cluster c(1.0, {{"hysteresis", 0.5}, {"min_residence", 10}});
			c.local.pw = 1.0;
			c.local.cores = 1;
			c.local.upw = 1.0;
			c.peers[0].profile.upw = peerUpw;
			c.peers[0].profile.processes = 0;
			c.apps[0].local = {process(3, true, 0.25, 0.0)};
			return c;
		};
		// 0.571 * 1.5 = 0.857: a peer at 1 / 1.2 = 0.833 is not enough, at 1 / 1.1 = 0.909
		// it is.
		Cluster near = loaded(0.2);
		for (int k = 0; k < 30; ++k)
			CHECK(near.tick().empty());
		Cluster c = loaded(0.1);
		std::vector<Action> actions = c.tick();
		REQUIRE(actions.size() == 1);
		const Action &s = actions[0];
		CHECK(s.kind == "swap");
		CHECK(s.params["deactivate"] == 3);
		CHECK(s.params["deactivate_agent"] == "j");
		CHECK(s.params["activate"].is_null());
		CHECK(s.params["activate_agent"] == "p");
		CHECK(s.reasons["side"] == "active");
		CHECK(s.reasons["slow_performance"].get<double>() == doctest::Approx(1.0 / 1.75));
		CHECK(s.reasons["fast_performance"].get<double>() == doctest::Approx(1.0 / 1.1));
		CHECK(s.reasons["ratio"].get<double>() == doctest::Approx(1.75 / 1.1));
		CHECK(s.reasons["why"].get<std::string>().find("rank 3") != std::string::npos);
		// What the agent maps it to: a migration of one process from here to the peer,
		// whose bridge activates a spare there and parks this one. Not again within
		// min_residence while nothing changes; again after it if the load stays.
		for (int k = 0; k < 9; ++k)
			CHECK(c.tick().empty());
		CHECK(c.tick().size() == 1);
	}

	TEST_CASE("active side: a process that just changed state stays; the idle side does not "
		  "swap back")
	{
		Cluster c(1.0, {{"hysteresis", 0.25}, {"min_residence", 10}});
		c.local.pw = 1.0;
		c.local.cores = 1;
		c.local.upw = 1.0;
		c.peers[0].profile.upw = 0.0;
		c.peers[0].profile.processes = 0;
		c.apps[0].local = {process(3, true, 0.25, c.now)}; // just activated here
		for (int k = 0; k < 9; ++k)
			CHECK(c.tick().empty());
		CHECK(c.tick().size() == 1);

		// The other end, after the swap: its process has the CPU to itself (own share 0.9
		// of 0.9 used), the node it left is loaded (upw 1). 1 against 1 / 2: no swap back,
		// whatever the residence.
		Cluster back(1.0, {{"hysteresis", 0.25}, {"min_residence", 10}});
		back.local.pw = 1.0;
		back.local.cores = 1;
		back.local.upw = 0.9;
		back.peers[0].profile.upw = 1.0;
		back.peers[0].profile.processes = 0;
		back.apps[0].local = {process(2, true, 0.9, 0.0)};
		for (int k = 0; k < 100; ++k)
			CHECK(back.tick().empty());
	}

	TEST_CASE("active side: a node the bridge said has no spare is not named again; the process swaps elsewhere")
	{
		// This node as in the case above, loaded; two idle peers, "p" the faster (peak 2) but without a spare of
		// the application, "q" (peak 1.5) with one.
		Cluster c(2.0, {{"hysteresis", 0.25}, {"min_residence", 10}, {"refusal_memory", 30}});
		c.local.pw = 1.0;
		c.local.cores = 1;
		c.local.upw = 1.0;
		c.peers[0].profile.upw = 0.0;
		c.peers[0].profile.processes = 0;
		PeerEntry q = c.peers[0];
		q.id = "q";
		q.profile.pw = 1.5;
		c.peers.push_back(q);
		c.apps[0].totalProcesses = 1;
		c.apps[0].local = {process(3, true, 0.25, 0.0)};
		std::vector<Action> a = c.tick();
		REQUIRE(a.size() == 1);
		CHECK(a[0].params["activate_agent"] == "p");
		// The migration of one onto "p" is refused: no spare process there.
		CommandResult refused;
		refused.app = "heat";
		refused.op = "migrate";
		refused.count = 1;
		refused.node = "p";
		refused.fromNode = "j";
		refused.kind = "swap";
		refused.decision = "swap";
		refused.askedHere = true;
		refused.code = "failed";
		refused.refusal = "pool_exhausted";
		refused.most = 0;
		refused.before = refused.after = 1;
		auto &module = static_cast<DecisionModule &>(*c.h.get());
		module.onCommandResult({c.overlay, c.apps}, refused);
		a = c.tick(); // at once, not min_residence later
		REQUIRE(a.size() == 1);
		CHECK(a[0].params["deactivate"] == 3);
		CHECK(a[0].params["activate_agent"] == "q");
		// "p" stays passed over past min_residence, while what the bridge said holds (refusal_memory).
		for (int k = 0; k < 25; ++k)
			for (const Action &later : c.tick())
				CHECK(later.params["activate_agent"] == "q");
		a = c.tick(5.0); // 31 s after the refusal: forgotten, "p" is the fastest again
		REQUIRE(a.size() == 1);
		CHECK(a[0].params["activate_agent"] == "p");
	}

	TEST_CASE("options are read strictly")
	{
		ModuleLoadResult r = loadModule(ModuleKind::Decision, "swap", {});
		REQUIRE(r.error == "");
		Module &m = *r.handle.get();
		CHECK(m.configure({{"residence", 3}}) ==
		      "config key 'swap.residence': unknown key");
		CHECK(m.configure({{"hysteresis", -1}}).find("swap.hysteresis") !=
		      std::string::npos);
		CHECK(m.configure({{"hysteresis", 0.2}, {"min_residence", 10}, {"refusal_memory", 0}}) == "");
	}
}
