// SPDX-License-Identifier: Apache-2.0
// Work stealing alone (agent/src/work_stealing.h) over a Membership with one peer: when a WRM goes out, its timeout
// and backoff, its reply, and what a hop does with one, with the rest of the core replaced by recording hooks.
#include "component_harness.h"
#include "work_stealing.h"

using namespace malleo;
using namespace malleo::test;

namespace {

struct StealingBench : ComponentBench {
	explicit StealingBench(CoreConfig config) : ComponentBench(std::move(config))
	{
		ModuleLoadResult d = loadModule(ModuleKind::Decision, "loaddiff", {});
		REQUIRE(d.error == "");
		decisionHandle = std::move(d.handle);
		REQUIRE(decisionHandle.get()->configure(nlohmann::json::object()) == "");
	}

	WorkStealingHooks stealingHooks()
	{
		return {
			.draining = [this] { return draining; },
			.hostedShares = [] { return nlohmann::json::object(); },
			.applications = [] { return std::vector<ApplicationInfo>{}; },
			.act = [this](const Action &, double, CoreOutputs &) { ++actions; },
			.reject = [this](const Rejection &r, const Message &, double, CoreOutputs &) {
				rejected.push_back(r.reason);
			},
		};
	}

	DecisionModule &decision() { return static_cast<DecisionModule &>(*decisionHandle.get()); }

	ModuleHandle decisionHandle;
	bool draining = false;
	int actions = 0;
};

CoreConfig idleAgent()
{
	CoreConfig c = agent("a");
	c.wrmOnJoin = false;
	c.wrmTimeout = 1.0;
	c.backoffInitial = 1.0;
	c.backoffMax = 4.0;
	return c;
}

// Agent a, its available share `apw`, started at 100 s with peer b; what it sent so far cleared.
struct Stealer {
	explicit Stealer(double apw, bool draining = false) : bench(idleAgent())
	{
		bench.ctx.local.apw = apw;
		bench.draining = draining;
		membership.start(100.0);
		stealing.start(100.0);
		membership.onHello(bench.from("hello", "b"), 100.0, bench.out);
		bench.out.clear();
	}

	StealingBench bench;
	Membership membership{bench.ctx, bench.protocol(), bench.membershipHooks()};
	WorkStealing stealing{bench.ctx, bench.protocol(), bench.decision(), membership, bench.stealingHooks()};
};

} // namespace

TEST_SUITE("work_stealing")
{
	TEST_CASE("an idle agent with a peer sends a WRM; unanswered, it backs off and doubles the backoff")
	{
		Stealer a(0.9);
		StealingBench &bench = a.bench;
		WorkStealing &stealing = a.stealing;
		stealing.tick(100.1, bench.out);
		REQUIRE(bench.sentTypes() == std::vector<std::string>{"wrm"});
		CHECK(bench.out.sends[0].endpoint == "tcp://b");
		CHECK(bench.out.sends[0].message["origin"] == "a");
		CHECK(stealing.status(100.1)["outstanding"] == true);

		bench.out.clear();
		stealing.tick(101.2, bench.out); // past wrmTimeout
		CHECK(bench.eventTypes() == std::vector<std::string>{"wrm_unanswered"});
		CHECK(bench.ctx.counters.get("wrm.unanswered") == 1);
		CHECK(stealing.status(101.2)["outstanding"] == false);
		CHECK(stealing.status(101.2)["backoff"] == 2.0);
		stealing.tick(101.5, bench.out);
		CHECK(bench.ctx.counters.get("wrm.sent") == 1); // waits out the backoff
		stealing.tick(102.3, bench.out);
		CHECK(bench.ctx.counters.get("wrm.sent") == 2);
		CHECK(bench.ctx.counters.get("wrm.retries") == 1);
	}

	TEST_CASE("a draining agent asks for no work, however idle")
	{
		Stealer a(1.0, true);
		StealingBench &bench = a.bench;
		WorkStealing &stealing = a.stealing;
		stealing.tick(100.1, bench.out);
		CHECK(bench.out.sends.empty());
		CHECK(bench.ctx.counters.get("wrm.sent") == 0);
	}

	TEST_CASE("the reply to the outstanding WRM resets the backoff; a stale one is counted and ignored")
	{
		Stealer a(0.9);
		StealingBench &bench = a.bench;
		WorkStealing &stealing = a.stealing;
		stealing.tick(100.1, bench.out);
		const uint64_t wrmId = bench.out.sends.back().message["wrm_id"];

		Message stale = makeMessage("wrm_reply", "b", 7);
		stale["wrm_id"] = wrmId + 1;
		stale["hops"] = 1;
		stale["reasons"] = nlohmann::json::object();
		stealing.onWrmReply(stale, 100.2, bench.out);
		CHECK(bench.ctx.counters.get("wrm.stale_replies") == 1);
		CHECK(stealing.status(100.2)["outstanding"] == true);

		Message reply = stale;
		reply["wrm_id"] = wrmId;
		stealing.onWrmReply(reply, 100.3, bench.out);
		CHECK(bench.ctx.counters.get("wrm.answered") == 1);
		CHECK(stealing.status(100.3)["outstanding"] == false);
		CHECK(stealing.status(100.3)["backoff"] == 1.0);
		CHECK(stealing.status(100.3)["next_in"].get<double>() == doctest::Approx(bench.ctx.config.wrmCooldown));
	}

	TEST_CASE("a WRM back at its origin is counted as looped and goes no further")
	{
		Stealer a(0.0);
		StealingBench &bench = a.bench;
		WorkStealing &stealing = a.stealing;
		Message wrm = makeMessage("wrm", "b", 3);
		wrm["origin"] = "a";
		wrm["origin_endpoint"] = "tcp://a";
		wrm["origin_profile"] = toJson(NodeProfile{});
		wrm["wrm_id"] = 1;
		wrm["ttl"] = 4;
		wrm["hops"] = 2;
		wrm["visited"] = {"a", "c"};
		stealing.onWrm(wrm, 100.1, bench.out);
		CHECK(bench.ctx.counters.get("wrm.looped") == 1);
		CHECK(bench.out.sends.empty());
		CHECK(bench.actions == 0);
	}
}
