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
		a.local = {process(0, true, 0.25, 0.0), process(1, false, 0.0, 0.0)};
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
		c.apps[0].local[1].ownLoad = 0.25;
		c.local.upw = 0.5;
		c.peers[0].profile.processes = 0;
		for (int k = 0; k < 60; ++k)
			CHECK(c.tick().empty());
	}

	TEST_CASE("no parked process here: nothing to decide; WRMs are never answered")
	{
		Cluster c(1.0);
		c.apps[0].local[1].active = true;
		CHECK(c.tick().empty());
		WorkVerdict v = static_cast<DecisionModule &>(*c.h.get())
				    .onWorkRequest({c.overlay, c.apps}, {"i", {}, 3, 1});
		CHECK_FALSE(v.answer);
		CHECK(v.reasons["module"] == "swap");
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
		CHECK(m.configure({{"hysteresis", 0.2}, {"min_residence", 10}}) == "");
	}
}
