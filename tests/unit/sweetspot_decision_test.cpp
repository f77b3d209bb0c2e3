// SPDX-License-Identifier: Apache-2.0
// The "sweetspot" decision module driven tick by tick over synthetic speed-up
// curves fed as ApplicationInfo.sizes, as the registry would fill them. The
// policy math is tested in sweetspot_policy_test.cpp.
#include <functional>
#include <vector>

#include "action_commands.h"
#include "core_harness.h"

using namespace malleo;
using namespace malleo::test;

namespace {

ModuleHandle sweetspot(nlohmann::json table)
{
	ModuleLoadResult r = loadModule(ModuleKind::Decision, "sweetspot", {});
	REQUIRE(r.error == "");
	REQUIRE(r.handle.get()->configure(table) == "");
	return std::move(r.handle);
}

// One application rooted on agent "root", resized by whatever the module asks.
struct Run {
	ModuleHandle h;
	std::function<double(int64_t)> curve;
	NodeProfile local;
	std::vector<ApplicationInfo> apps;
	double now = 100.0;
	OverlayView overlay;

	Run(nlohmann::json table, std::function<double(int64_t)> t, int64_t start)
	    : h(sweetspot(std::move(table))), curve(std::move(t))
	{
		ApplicationInfo a;
		a.id = "heat";
		a.malleable = true;
		a.rootAgent = "root";
		a.remainingIterations = 1000;
		a.redistributionCost = 0.5;
		apps.push_back(a);
		measure(start);
	}

	// The application runs at `size` and reports its iteration time.
	void measure(int64_t size)
	{
		apps[0].totalProcesses = size;
		apps[0].sizes.push_back({size, curve(size)});
	}

	std::vector<Action> tick()
	{
		overlay.self = "root";
		overlay.now = now += 1.0;
		overlay.local = &local;
		return static_cast<DecisionModule &>(*h.get()).onTick({overlay, apps});
	}
};

// The bridge's refusal of sweetspot's growth by `count` onto `node` ("": the bridge chose): too few spare
// processes there, `most` of them, the application at `size` processes.
CommandResult refusedGrowth(const std::string &node, int64_t count, int64_t most, int64_t size)
{
	CommandResult r;
	r.app = "heat";
	r.op = "split";
	r.count = count;
	r.node = node;
	r.kind = "grow";
	r.decision = "sweetspot";
	r.askedHere = true;
	r.code = "failed";
	r.refusal = "pool_exhausted";
	r.most = most;
	r.before = r.after = size;
	return r;
}

} // namespace

TEST_SUITE("sweetspot_decision")
{
	TEST_CASE("grows while the iteration time improves, then shrinks back after a growth that "
		  "did not pay")
	{
		// Perfect scaling up to 8 processors, then communication takes over:
		// the sweet spot is 8.
		Run run(
		    {{"step", 2}, {"max_processors", 64}},
		    [](int64_t p) { return p <= 8 ? 100.0 / static_cast<double>(p) : 15.0; }, 2);
		std::vector<int64_t> sizes = {2};
		for (int k = 0; k < 10; ++k) {
			std::vector<Action> actions = run.tick();
			if (actions.empty())
				continue;
			REQUIRE(actions.size() == 1);
			const Action &a = actions[0];
			CHECK(a.app == "heat");
			CHECK(a.params["from"] == sizes.back());
			CHECK(a.reasons.contains("slope"));
			CHECK(a.reasons.contains("normalized_slope"));
			CHECK(a.reasons["cost"] == 0.5);
			CHECK(a.reasons["remaining_iterations"] == 1000);
			int64_t size = a.params["size"].get<int64_t>();
			if (a.kind == "grow") {
				CHECK(size == sizes.back() + 2);
				CHECK(a.reasons["horizon_gain"].get<double>() > 0.5);
				if (sizes.size() >= 2)
					CHECK(a.reasons["normalized_slope"].get<double>() > 0.2);
			} else {
				CHECK(a.kind == "shrink");
				CHECK(a.reasons["reason"] == "growth-did-not-pay");
			}
			sizes.push_back(size);
			run.measure(size);
		}
		CHECK(sizes == std::vector<int64_t>{2, 4, 6, 8, 10, 8});
	}

	TEST_CASE("one decision per size: nothing more until a sample at the new size arrives")
	{
		Run run(
		    {{"step", 2}, {"max_processors", 64}},
		    [](int64_t p) { return 100.0 / static_cast<double>(p); }, 4);
		std::vector<Action> first = run.tick();
		REQUIRE(first.size() == 1);
		CHECK(first[0].reasons["reason"] == "first-probe");
		CHECK(run.tick().empty());
		// The application resized but has not reported at the new size yet.
		run.apps[0].totalProcesses = 6;
		CHECK(run.tick().empty());
		run.apps[0].sizes.push_back({6, 100.0 / 6});
		std::vector<Action> second = run.tick();
		REQUIRE(second.size() == 1);
		CHECK(second[0].kind == "grow");
		CHECK(second[0].reasons["normalized_slope"].get<double>() == doctest::Approx(1.0));
	}

	TEST_CASE("a growth that costs more than it saves over the remaining iterations is "
		  "declined once, as a stay")
	{
		// 1 process at 0.02 s an iteration; nothing measured yet, so the cost is
		// unmeasured_cost.
		Run run(
		    {{"max_processors", 8}, {"unmeasured_cost", 2.0}},
		    [](int64_t p) { return 0.02 / static_cast<double>(p); }, 1);
		run.apps[0].redistributionCost = 0.0;
		run.apps[0].remainingIterations = 150;
		std::vector<Action> late = run.tick();
		REQUIRE(late.size() == 1);
		CHECK(late[0].kind == "stay");
		CHECK(late[0].params["size"] == 1);
		CHECK(late[0].reasons["reason"] == "cost-exceeds-gain");
		CHECK(late[0].reasons["declined"] == "grow");
		CHECK(late[0].reasons["declined_size"] == 2);
		CHECK(late[0].reasons["cost"] == 2.0);
		CHECK(late[0].reasons["cost_measured"] == false);
		CHECK(late[0].reasons["remaining_iterations"] == 150);
		CHECK(late[0].reasons["remaining_known"] == true);
		CHECK(late[0].reasons["horizon_gain"].get<double>() == doctest::Approx(1.5));
		// Said once per size.
		CHECK(run.tick().empty());

		// The same application with more left grows; a measured cost replaces the default.
		Run early(
		    {{"max_processors", 8}, {"unmeasured_cost", 2.0}},
		    [](int64_t p) { return 0.02 / static_cast<double>(p); }, 1);
		early.apps[0].redistributionCost = 0.0;
		early.apps[0].remainingIterations = 450;
		std::vector<Action> grow = early.tick();
		REQUIRE(grow.size() == 1);
		CHECK(grow[0].kind == "grow");
		CHECK(grow[0].params["size"] == 2);
		CHECK(grow[0].reasons["cost_measured"] == false);
		Run measured(
		    {{"max_processors", 8}, {"unmeasured_cost", 2.0}},
		    [](int64_t p) { return 0.02 / static_cast<double>(p); }, 1);
		measured.apps[0].redistributionCost = 5.0;
		measured.apps[0].remainingIterations = 450;
		std::vector<Action> dear = measured.tick();
		REQUIRE(dear.size() == 1);
		CHECK(dear[0].kind == "stay");
		CHECK(dear[0].reasons["cost"] == 5.0);
		CHECK(dear[0].reasons["cost_measured"] == true);
	}

	TEST_CASE("on a smooth curve growth stops near the sweet spot, not past it")
	{
		// T = 400/p + p: minimum at p = 20.
		Run run(
		    {{"step", 4}, {"max_processors", 256}},
		    [](int64_t p) {
			    return 400.0 / static_cast<double>(p) + static_cast<double>(p);
		    },
		    4);
		int64_t size = 4;
		for (int k = 0; k < 20; ++k)
			for (const Action &a : run.tick()) {
				size = a.params["size"].get<int64_t>();
				run.measure(size);
			}
		CHECK(size >= 12);
		CHECK(size <= 20);
	}

	TEST_CASE(
	    "only the root agent decides, only for malleable applications; WRMs are never answered")
	{
		Run run(
		    {{"max_processors", 64}},
		    [](int64_t p) { return 10.0 / static_cast<double>(p); }, 2);
		run.apps[0].rootAgent = "elsewhere";
		CHECK(run.tick().empty());
		run.apps[0].rootAgent = "root";
		run.apps[0].malleable = false;
		CHECK(run.tick().empty());

		WorkVerdict v = static_cast<DecisionModule &>(*run.h.get())
				    .onWorkRequest({run.overlay, run.apps}, {"i", {}, 3, 1, {}});
		CHECK_FALSE(v.answer);
		CHECK(v.reasons["why"].get<std::string>().find("never answers") !=
		      std::string::npos);
	}

	TEST_CASE("max_processors 0: the cores this agent can see bound the growth")
	{
		Run run(
		    nlohmann::json::object(),
		    [](int64_t p) { return 10.0 / static_cast<double>(p); }, 2);
		run.local.cores = 2;
		CHECK(run.tick().empty()); // 3 > 2 cores
		Run wider(
		    nlohmann::json::object(),
		    [](int64_t p) { return 10.0 / static_cast<double>(p); }, 2);
		wider.local.cores = 4;
		std::vector<Action> a = wider.tick();
		REQUIRE(a.size() == 1);
		CHECK(a[0].reasons["max_processors"] == 4);
	}

	TEST_CASE("a growth names the node with the most idle cores, the faster per core on a tie")
	{
		Run run(
		    nlohmann::json::object(),
		    [](int64_t p) { return 10.0 / static_cast<double>(p); }, 2);
		run.local.cores = 2;
		run.local.apw = 0.0; // the application's two processes take both cores
		PeerEntry busy{"busy", "tcp://b", "", {}, 0.0, true, true};
		busy.profile.cores = 8;
		busy.profile.pw = 8;
		busy.profile.apw = 0.25; // 2 idle cores
		PeerEntry slow{"slow", "tcp://s", "", {}, 0.0, true, true};
		slow.profile.cores = 4;
		slow.profile.pw = 2;
		slow.profile.apw = 1.0; // 4 idle cores of speed 0.5
		PeerEntry fast{"fast", "tcp://f", "", {}, 0.0, true, true};
		fast.profile.cores = 4;
		fast.profile.pw = 8;
		fast.profile.apw = 1.0; // 4 idle cores of speed 2
		const std::vector<PeerEntry> peers = {busy, slow, fast}; // sorted by id, as the overlay keeps them
		run.overlay.alive = peers;
		std::vector<Action> a = run.tick();
		REQUIRE(a.size() == 1);
		CHECK(a[0].kind == "grow");
		CHECK(a[0].params["node"] == "fast");
		CHECK(a[0].reasons["idle_cores"] == doctest::Approx(4.0));
		// The agent turns it into a split onto that node (agent/src/action_commands.cpp).
		const auto c = commandForAction(a[0], "root", &run.apps[0]);
		REQUIRE(std::holds_alternative<Command>(c));
		CHECK(std::get<Command>(c).op == Operation::Split);
		CHECK(std::get<Command>(c).node == "fast");
		CHECK(std::get<Command>(c).count == 1);
	}

	TEST_CASE("without a node with an idle core, a growth names none: the bridge chooses")
	{
		Run run(
		    nlohmann::json::object(),
		    [](int64_t p) { return 10.0 / static_cast<double>(p); }, 2);
		run.local.cores = 4;
		run.local.apw = 0.2; // 0.8 of a core idle
		std::vector<Action> a = run.tick();
		REQUIRE(a.size() == 1);
		CHECK(a[0].kind == "grow");
		CHECK_FALSE(a[0].params.contains("node"));
		const auto c = commandForAction(a[0], "root", &run.apps[0]);
		REQUIRE(std::holds_alternative<Command>(c));
		CHECK(std::get<Command>(c).node == "");
	}

	TEST_CASE("a refused growth is decided again after retry_after, without the node the bridge said has no spare")
	{
		Run run(
		    {{"retry_after", 3.0}},
		    [](int64_t p) { return 10.0 / static_cast<double>(p); }, 1);
		run.local.cores = 2;
		run.local.apw = 0.5; // one idle core here
		PeerEntry idle{"idle", "tcp://i", "", {}, 0.0, true, true};
		idle.profile.cores = 4;
		idle.profile.pw = 4;
		idle.profile.apw = 1.0; // four idle cores, but no parked process of the application there
		const std::vector<PeerEntry> peers = {idle};
		run.overlay.alive = peers;
		auto &module = static_cast<DecisionModule &>(*run.h.get());
		std::vector<Action> a = run.tick();
		REQUIRE(a.size() == 1);
		CHECK(a[0].kind == "grow");
		CHECK(a[0].params["node"] == "idle");
		// The bridge refuses the split onto "idle": no spare process there.
		module.onCommandResult({run.overlay, run.apps}, refusedGrowth("idle", 1, 0, 1));
		CHECK(run.tick().empty()); // 1 s later: within retry_after
		CHECK(run.tick().empty());
		a = run.tick(); // 3 s after the refusal
		REQUIRE(a.size() == 1);
		CHECK(a[0].kind == "grow");
		CHECK(a[0].params["node"] == "root"); // the idle node passed over: this one has the next idle core
		CHECK(a[0].params["size"] == 2);
	}

	TEST_CASE("a growth takes at most the spares the bridge said; with none anywhere it waits")
	{
		Run run(
		    {{"retry_after", 2.0}, {"step", 4}},
		    [](int64_t p) { return 10.0 / static_cast<double>(p); }, 2);
		run.local.cores = 8;
		run.local.apw = 0.1; // no whole idle core: the growth names no node, the bridge chooses
		auto &module = static_cast<DecisionModule &>(*run.h.get());
		std::vector<Action> a = run.tick();
		REQUIRE(a.size() == 1);
		CHECK(a[0].params["size"] == 6);
		// One parked process in the whole pool.
		module.onCommandResult({run.overlay, run.apps}, refusedGrowth("", 4, 1, 2));
		CHECK(run.tick().empty());
		a = run.tick();
		REQUIRE(a.size() == 1);
		CHECK(a[0].params["size"] == 3);
		CHECK(a[0].reasons["spares"] == 1);
		// That one was taken by another application meanwhile: refused again, none left.
		module.onCommandResult({run.overlay, run.apps}, refusedGrowth("", 1, 0, 2));
		for (int i = 0; i < 5; ++i)
			CHECK(run.tick().empty()); // the pool is empty, the bridge said: nothing asked
		// The application is resized by other means (3 processes now): what the bridge said no longer holds.
		run.measure(3);
		a = run.tick();
		REQUIRE(a.size() == 1);
		CHECK(a[0].params["size"] == 7); // the size changed: what the bridge said no longer holds
	}

	TEST_CASE("options are read strictly")
	{
		ModuleLoadResult r = loadModule(ModuleKind::Decision, "sweetspot", {});
		REQUIRE(r.error == "");
		Module &m = *r.handle.get();
		CHECK(m.configure({{"slope", 0.1}}) == "config key 'sweetspot.slope': unknown key");
		CHECK(m.configure({{"step", 0}}).find("sweetspot.step") != std::string::npos);
		CHECK(m.configure({{"slope_threshold", 0.3},
				   {"step", 2},
				   {"max_processors", 16},
				   {"min_improvement", 0.01},
				   {"unknown_horizon", 50},
				   {"retry_after", 1.5},
				   {"refusal_memory", 30}}) == "");
		CHECK(m.configure({{"retry_after", -1}}).find("sweetspot.retry_after") != std::string::npos);
	}
}
