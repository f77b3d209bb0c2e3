// SPDX-License-Identifier: Apache-2.0
// From a decision to a command: the mapping of actions (action_commands.h), and the requests and results between
// the agent that decides and the one hosting rank 0, over the in-memory network.
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

Command mapped(const Action &action, const ApplicationInfo *app = nullptr)
{
	auto result = commandForAction(action, "n2", app);
	REQUIRE(std::holds_alternative<Command>(result));
	return std::get<Command>(result);
}

std::string refusedBecause(const Action &action)
{
	auto result = commandForAction(action, "n2", nullptr);
	REQUIRE(std::holds_alternative<NoCommand>(result));
	return std::get<NoCommand>(result).why;
}

CoreConfig loopConfig(const std::string &id, std::vector<std::string> seeds = {})
{
	CoreConfig c;
	c.id = id;
	for (const std::string &s : seeds)
		c.seeds.push_back("tcp://" + s);
	c.wrmEnabled = false;
	c.holdDown = 5.0;
	return c;
}

void registerRank(Core &core, double now, uint32_t rank)
{
	CoreOutputs out;
	REQUIRE(core.onLocalRequest(request("register", {{"app", "heat"}, {"rank", rank}, {"pid", 100 + rank},
							 {"size", 2}, {"malleable", false}}),
				    now, out)["type"] == "ack");
}

// What a core sent outside the network's own ticks (a local request's outputs), delivered as the network would.
void deliver(TestNetwork &net, CoreOutputs &out)
{
	for (const CoreOutputs::Send &send : out.sends)
		net.inject(send.endpoint.substr(std::string("tcp://").size()), encodeMessage(send.message, 1));
	out.clear();
}

} // namespace

TEST_SUITE("action_commands")
{
	TEST_CASE("each kind of action becomes the command docs/writing-a-decision-module.md gives")
	{
		// ios on a work request: split into n, r of them on the requester; the transfer is the split's.
		Command split = mapped({"split", "heat", {{"n", 4}, {"l", 1}, {"r", 3}, {"target", "n3"}}, {}});
		CHECK(split.op == Operation::Split);
		CHECK(split.count == 3);
		CHECK(split.node == "n3");
		CHECK(split.from.empty());
		CHECK(refusedBecause({"transfer", "heat", {{"processes", 3}, {"after_split", true}, {"target", "n3"}}, {}})
			  .find("carried out by the split") != std::string::npos);
		// A transfer of this node's processes: a migration from here.
		Command transfer =
		    mapped({"transfer", "heat", {{"ranks", {1, 4}}, {"processes", 2}, {"after_split", false}, {"target", "n1"}}, {}});
		CHECK(transfer.op == Operation::Migrate);
		CHECK(transfer.count == 2);
		CHECK(transfer.node == "n1");
		CHECK(transfer.from == "n2");
		// ios's merge folds this node's processes from `from` into `into`.
		Command merge = mapped({"merge", "heat", {{"ranks", {0, 1, 2}}, {"from", 3}, {"into", 1}}, {}});
		CHECK(merge.op == Operation::Merge);
		CHECK(merge.count == 2);
		CHECK(merge.from == "n2");
		CHECK(merge.node.empty());
		// swap: the slow node's process gives its place to a parked one of the fast node.
		Command swap = mapped(
		    {"swap", "heat", {{"deactivate", 3}, {"deactivate_agent", "n2"}, {"activate", 5}, {"activate_agent", "n4"}}, {}});
		CHECK(swap.op == Operation::Migrate);
		CHECK(swap.count == 1);
		CHECK(swap.from == "n2");
		CHECK(swap.node == "n4");
		// sweetspot names the size to reach.
		CHECK(mapped({"grow", "heat", {{"from", 4}, {"size", 6}}, {}}).op == Operation::Split);
		CHECK(mapped({"grow", "heat", {{"from", 4}, {"size", 6}}, {}}).count == 2);
		ApplicationInfo app;
		app.totalProcesses = 6;
		Command shrink = mapped({"shrink", "heat", {{"size", 4}}, {}}, &app);
		CHECK(shrink.op == Operation::Merge);
		CHECK(shrink.count == 2);
		// What is not a command says why.
		CHECK(refusedBecause({"rebalance", "heat", {}, {}}).find("not a kind malleo carries out") != std::string::npos);
		CHECK(refusedBecause({"split", "", {{"r", 1}}, {}}).find("node-level") != std::string::npos);
		CHECK(refusedBecause({"split", "heat", {{"target", "n3"}}, {}}).find("no process count") != std::string::npos);
		CHECK(refusedBecause({"grow", "heat", {{"from", 4}, {"size", 4}}, {}}).find("nothing to do") != std::string::npos);
		CHECK(refusedBecause({"migrate", "heat", {{"count", 1}, {"target", "n2"}}, {}}).find("would move to it") !=
		      std::string::npos);
	}

	TEST_CASE("a command's fields go through checkCommand and back unchanged")
	{
		Command c{Operation::Migrate, 2, "n1", "n2", {1, 3}};
		nlohmann::json fields = commandFields(c);
		CHECK(fields["from_node"] == "n2");
		CHECK_FALSE(checkCommand(fields).has_value());
		Command back;
		REQUIRE_FALSE(readCommand(fields, back).has_value());
		CHECK(back.op == c.op);
		CHECK(back.count == c.count);
		CHECK(back.node == c.node);
		CHECK(back.from == c.from);
		CHECK(back.weights == c.weights);
		CHECK(describeCommand(c) == "migrate 2 n2 -> n1");
		CHECK(checkCommand({{"op", "split"}, {"count", 1}, {"from_node", "n2"}}).value().find("split takes no") !=
		      std::string::npos);
		CHECK(checkCommand({{"op", "migrate"}, {"count", 1}, {"from_node", "n2"}, {"node", "n2"}}).value().find(
			  "same node") != std::string::npos);
	}
}

TEST_SUITE("reconfiguration_requests")
{
	TEST_CASE("a force at an agent without rank 0 reaches the one with it, whose result comes back")
	{
		TestNetwork net;
		TestNode &a = net.add(loopConfig("a"), "p2p", nlohmann::json::object(), "none");
		TestNode &b = net.add(loopConfig("b", {"a"}), "p2p", nlohmann::json::object(), "none");
		registerRank(*a.core, net.now(), 0);
		registerRank(*b.core, net.now(), 1);
		CoreOutputs out;
		// The coordinator's first poll makes the application malleable at a; a's heartbeats tell b where rank 0 is.
		REQUIRE(a.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 1}, {"size", 2}}), net.now(),
					       out)["op"] == "none");
		net.run(2.0);
		CHECK(b.core->applications().at("heat").malleable);

		Message routed = b.core->onLocalRequest(
		    request("force", {{"app", "heat"}, {"op", "migrate"}, {"count", 1}, {"from_node", "b"}, {"node", "a"}}),
		    net.now(), out);
		REQUIRE(routed["type"] == "force_reply");
		deliver(net, out);
		CHECK(routed["routed_to"] == "a");
		const uint64_t requestId = routed["request"].get<uint64_t>();
		CHECK(requestId > 0);
		net.run(0.2);
		REQUIRE(a.eventsOf("command_queued").size() == 1);
		CHECK(a.eventsOf("command_queued")[0]["origin"] == "b");

		// A second request while the first waits: refused by a, with its reason, back to b.
		Message second = b.core->onLocalRequest(
		    request("force", {{"app", "heat"}, {"op", "merge"}, {"count", 1}}), net.now(), out);
		REQUIRE(second["type"] == "force_reply");
		deliver(net, out);
		net.run(0.2);
		std::vector<nlohmann::json> refusals = b.eventsOf("reconf_result");
		REQUIRE(refusals.size() == 1);
		CHECK(refusals[0]["request"] == second["request"]);
		CHECK(refusals[0]["ok"] == false);
		CHECK(refusals[0]["code"] == "busy");
		CHECK(refusals[0]["text"].get<std::string>().find("already has command") != std::string::npos);

		// The coordinator polls a, carries it out, reports: b hears the result of its request.
		Message command = a.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 9}, {"size", 2}}),
							 net.now(), out);
		CHECK(command["op"] == "migrate");
		CHECK(command["from_node"] == "b");
		CHECK(command["node"] == "a");
		a.core->onLocalRequest(request("result", {{"app", "heat"}, {"command", command["command"]}, {"ok", true},
							  {"before", 2}, {"after", 2}, {"iteration", 9}}),
				       net.now(), out);
		deliver(net, out);
		net.run(0.2);
		std::vector<nlohmann::json> results = b.eventsOf("reconf_result");
		REQUIRE(results.size() == 2);
		CHECK(results[1]["request"] == requestId);
		CHECK(results[1]["ok"] == true);
		CHECK(results[1]["root"] == "a");
		CHECK(b.core->applications().at("heat").lastReconfiguration >= 0);
	}

	TEST_CASE("actions.node_weights: the root agent adds each node's power to the commands it queues")
	{
		TestNetwork net;
		CoreConfig ca = loopConfig("a"), cb = loopConfig("b", {"a"});
		ca.nodeWeights = true;
		TestNode &a = net.add(ca, "p2p", nlohmann::json::object(), "none");
		TestNode &b = net.add(cb, "p2p", nlohmann::json::object(), "none");
		NodeProfile pa, pb;
		pa.pw = 2.0;
		pb.pw = 0.5;
		a.core->setLocalProfile(pa);
		b.core->setLocalProfile(pb);
		registerRank(*a.core, net.now(), 0);
		registerRank(*b.core, net.now(), 1);
		CoreOutputs out;
		a.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 1}, {"size", 2}}), net.now(), out);
		net.run(3.0);
		REQUIRE(a.core->onLocalRequest(request("force", {{"app", "heat"}, {"op", "split"}, {"count", 1}}), net.now(),
					       out)["type"] == "force_reply");
		Message command = a.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 2}, {"size", 2}}),
							 net.now(), out);
		CHECK(command["op"] == "split");
		REQUIRE(command.contains("node_weights"));
		CHECK(command["node_weights"]["a"] == 2000);
		CHECK(command["node_weights"]["b"] == 500);
		CHECK_FALSE(checkCommand(command).has_value());
	}

	TEST_CASE("the root holds a decided request within the hold-down after a result, not a forced one")
	{
		TestNetwork net;
		TestNode &a = net.add(loopConfig("a"), "p2p", nlohmann::json::object(), "none");
		TestNode &b = net.add(loopConfig("b", {"a"}), "p2p", nlohmann::json::object(), "none");
		registerRank(*a.core, net.now(), 0);
		registerRank(*b.core, net.now(), 1);
		CoreOutputs out;
		a.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 1}, {"size", 2}}), net.now(), out);
		net.run(2.0);
		// A first operation, done.
		Message queued = a.core->onLocalRequest(request("force", {{"app", "heat"}, {"op", "split"}, {"count", 1}}),
							net.now(), out);
		Message command = a.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 2}, {"size", 2}}),
							 net.now(), out);
		a.core->onLocalRequest(request("result", {{"app", "heat"}, {"command", command["command"]}, {"ok", true}}),
				       net.now(), out);
		// What b's decision would send a second later, and the same asked by a person.
		auto ask = [&](const char *trigger, uint64_t id) {
			Message m = makeMessage("reconf_request", "b", id);
			m.update({{"app", "heat"}, {"request", id}, {"op", "merge"}, {"count", 1}, {"trigger", trigger}});
			CoreOutputs o;
			net.run(0.1);
			a.core->onPeerMessage(m, net.now(), o);
			return o;
		};
		CoreOutputs held = ask("tick", 77);
		bool refusedHeld = false;
		for (const nlohmann::json &e : held.events)
			refusedHeld |= e["type"] == "reconf_result" && e["code"] == "hold_down";
		CHECK(refusedHeld);
		CHECK(a.core->counters().get("requests.refused.hold_down") == 1);
		ask("force", 78);
		CHECK(a.core->counters().get("commands.queued") == 2);
		net.run(6.0);
		// Past the hold-down a decision is taken again (the forced merge holds the slot: busy, not held).
		CoreOutputs later = ask("tick", 79);
		bool busy = false;
		for (const nlohmann::json &e : later.events)
			busy |= e["type"] == "reconf_result" && e["code"] == "busy";
		CHECK(busy);
		(void)queued;
	}
}

// A decision module that records the results it is told of (decision_module.h, onCommandResult).
class RecordingDecision : public DecisionModule
{
public:
	std::string configure(const nlohmann::json &) override { return {}; }
	WorkVerdict onWorkRequest(const DecisionView &, const WorkRequest &) override { return {}; }
	std::vector<Action> onTick(const DecisionView &) override { return {}; }
	void onCommandResult(const DecisionView &view, const CommandResult &result) override
	{
		results.push_back(result);
		sizes.push_back(view.apps.empty() ? -1 : view.apps.front().totalProcesses);
	}
	std::vector<CommandResult> results;
	std::vector<int64_t> sizes; // the application's size in the view each result came with
};

// One agent hosting rank 0 of "heat" with `decision`, built for module ABI 1.`abiMinor`; a forced split whose
// result the coordinator reports as `result`'s fields say.
void forcedSplitResult(RecordingDecision &decision, uint32_t abiMinor, const nlohmann::json &result)
{
	ModuleLoadResult p = loadModule(ModuleKind::Protocol, "p2p", {});
	REQUIRE(p.error == "");
	REQUIRE(p.handle.get()->configure(nlohmann::json::object()) == "");
	CoreConfig config = loopConfig("a");
	config.endpoint = "tcp://a";
	Core core(config, static_cast<ProtocolModule &>(*p.handle.get()), decision);
	core.setModuleNames({{"decision", {{"name", "recording"}, {"abi_minor", abiMinor}}}});
	CoreOutputs out;
	core.start(100.0, out);
	registerRank(core, 100.0, 0);
	core.onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 1}, {"size", 2}}), 100.1, out);
	REQUIRE(core.onLocalRequest(request("force", {{"app", "heat"}, {"op", "split"}, {"count", 3}, {"node", "a"}}),
				    100.2, out)["type"] == "force_reply");
	Message command = core.onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 2}, {"size", 2}}), 100.3,
					      out);
	REQUIRE(command["op"] == "split");
	Message m = request("result", {{"app", "heat"}, {"command", command["command"]}});
	m.update(result);
	REQUIRE_FALSE(validateMessage(m, Channel::Local).has_value());
	REQUIRE(core.onLocalRequest(m, 100.4, out)["type"] == "ack");
	// The event log and `malleo apps` show the structured reason too.
	if (!result.value("ok", true)) {
		bool shown = false;
		for (const nlohmann::json &e : out.events)
			shown |= e["type"] == "command_result" && e.value("refusal", nlohmann::json()) == result["refusal"];
		CHECK(shown);
	}
}

TEST_SUITE("command_results")
{
	TEST_CASE("the decision module hears each result with the bridge's structured reason (ABI 1.2)")
	{
		RecordingDecision refused;
		forcedSplitResult(refused, 2,
				  {{"ok", false},
				   {"text", "split of 3: only 1 spare process on node 'a'"},
				   {"before", 2},
				   {"after", 2},
				   {"refusal", {{"kind", "pool_exhausted"}, {"most", 1}}}});
		REQUIRE(refused.results.size() == 1);
		const CommandResult &r = refused.results[0];
		CHECK(r.app == "heat");
		CHECK_FALSE(r.ok);
		CHECK(r.askedHere);
		CHECK(r.op == "split");
		CHECK(r.count == 3);
		CHECK(r.node == "a");
		CHECK(r.trigger == "force");
		CHECK(r.code == "failed");
		CHECK(r.refusal == "pool_exhausted");
		CHECK(r.most == 1);
		CHECK(r.before == 2);
		CHECK(r.text.find("only 1 spare") != std::string::npos);

		RecordingDecision done;
		forcedSplitResult(done, 2, {{"ok", true}, {"before", 2}, {"after", 5}});
		REQUIRE(done.results.size() == 1);
		CHECK(done.results[0].ok);
		CHECK(done.results[0].code == "");
		CHECK(done.results[0].refusal == "");
		CHECK(done.results[0].most == -1);
		CHECK(done.results[0].after == 5);
		CHECK(done.sizes[0] == 5); // the view already has the size the result says
	}

	TEST_CASE("a decision module built against ABI 1.1 is not called")
	{
		RecordingDecision old;
		forcedSplitResult(old, 1,
				  {{"ok", false}, {"text", "no"}, {"refusal", {{"kind", "merge_ranks"}, {"most", 0}}}});
		CHECK(old.results.empty());
	}
}

TEST_SUITE("command_journal")
{
	// Two agents in turn in one run directory: what the first held goes to the second through its journal.
	TEST_CASE("a restarted agent reports a queued command lost, awaits one in flight, and numbers after both")
	{
		TestNetwork net;
		TestNode &first = net.add(loopConfig("a"), "p2p", nlohmann::json::object(), "none");
		registerRank(*first.core, net.now(), 0);
		CoreOutputs out;
		REQUIRE(first.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 1}, {"size", 2}}),
						   net.now(), out)["op"] == "none");
		Message forced = first.core->onLocalRequest(
		    request("force", {{"app", "heat"}, {"op", "split"}, {"count", 2}}), net.now(), out);
		REQUIRE(forced["type"] == "force_reply");
		const nlohmann::json queued = first.core->commandJournal();
		CHECK(queued["next_command"] == forced["command"].get<uint64_t>() + 1);
		CHECK(queued["commands"]["heat"]["sent"] == false);
		CHECK(queued["commands"]["heat"]["count"] == 2);

		TestNode &second = net.add(loopConfig("a2"), "p2p", nlohmann::json::object(), "none");
		CHECK(second.core->recoverCommands(queued, net.now(), out).empty());
		std::vector<nlohmann::json> lost;
		for (const nlohmann::json &e : out.events)
			if (e["type"] == "command_lost")
				lost.push_back(e);
		REQUIRE(lost.size() == 1);
		CHECK(lost[0]["command"] == forced["command"]);
		CHECK(lost[0]["sent"] == false);
		CHECK(second.core->commandJournal()["commands"].empty());
		CHECK(second.core->commandJournal()["next_command"] == queued["next_command"]);
		out.clear();

		// In flight: the coordinator took it. The next agent takes its result when it comes...
		CHECK(first.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 5}, {"size", 2}}),
						 net.now(), out)["op"] == "split");
		const nlohmann::json sent = first.core->commandJournal();
		CHECK(sent["commands"]["heat"]["sent"] == true);
		TestNode &third = net.add(loopConfig("a3"), "p2p", nlohmann::json::object(), "none");
		CHECK(third.core->recoverCommands(sent, net.now(), out).empty());
		CHECK(third.core->commandJournal()["commands"]["heat"]["sent"] == true);
		CHECK(third.core->onLocalRequest(request("result", {{"app", "heat"}, {"command", forced["command"]},
								    {"ok", true}, {"before", 2}, {"after", 4},
								    {"iteration", 5}}),
						 net.now(), out)["type"] == "ack");
		CHECK(third.eventsOf("command_result").empty()); // out, not the network's: looked at below
		bool resulted = false;
		for (const nlohmann::json &e : out.events)
			resulted = resulted || (e["type"] == "command_result" && e["after"] == 4);
		CHECK(resulted);
		out.clear();

		// ... and reports it lost when the coordinator polls again without having sent it.
		TestNode &fourth = net.add(loopConfig("a4"), "p2p", nlohmann::json::object(), "none");
		CHECK(fourth.core->recoverCommands(sent, net.now(), out).empty());
		registerRank(*fourth.core, net.now(), 0);
		out.clear();
		fourth.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 9}, {"size", 4}}), net.now(),
					    out);
		bool lostInFlight = false;
		for (const nlohmann::json &e : out.events)
			lostInFlight = lostInFlight || (e["type"] == "command_lost" && e["sent"] == true);
		CHECK(lostInFlight);
		Message next = fourth.core->onLocalRequest(request("force", {{"app", "heat"}, {"op", "merge"}, {"count", 1}}),
							   net.now(), out);
		REQUIRE(next["type"] == "force_reply");
		CHECK(next["command"].get<uint64_t>() > forced["command"].get<uint64_t>());

		// A journal that is not one: one line, nothing recovered.
		CHECK(!fourth.core->recoverCommands(nlohmann::json::array(), net.now(), out).empty());
		CHECK(!fourth.core->recoverCommands({{"version", 1}, {"next_command", "x"}, {"commands", {}}}, net.now(), out)
			       .empty());
		CHECK(fourth.core->recoverCommands(nlohmann::json::parse(R"({"version": 1, "next_command": 3,
										"commands": {"x": 5}})"),
						   net.now(), out)
			      .find("'x' is unreadable") != std::string::npos);
	}
}

namespace {

// A process of "heat", launched as a world of 4, registered at `core`; parked (a spare of pool mode) unless active.
void registerProcess(Core &core, double now, uint32_t rank, bool active)
{
	CoreOutputs out;
	REQUIRE(core.onLocalRequest(request("register", {{"app", "heat"}, {"rank", rank}, {"pid", 100 + rank},
							 {"size", 4}, {"malleable", false}}),
				    now, out)["type"] == "ack");
	REQUIRE(core.onLocalRequest(request("app_report", {{"app", "heat"}, {"rank", rank}, {"active", active}}), now,
				    out)["type"] == "ack");
}

nlohmann::json heatAt(Core &core, double now)
{
	const Message reply = core.appsReply(now);
	for (const nlohmann::json &app : reply["apps"])
		if (app["id"] == "heat")
			return app;
	FAIL("no application heat");
	return nullptr;
}

} // namespace

TEST_SUITE("root_figures")
{
	TEST_CASE("an agent without rank 0 plans on the root's active size, not the launch's world with its spares")
	{
		// heat launched as 4 processes, two of them parked spares: ranks 0 and 3 at a (the root), 1 and 2 at b.
		// Only a hears the coordinator say that 2 are active; b's registry says the world, 4.
		TestNetwork net;
		TestNode &a = net.add(loopConfig("a"), "p2p", nlohmann::json::object(), "none");
		TestNode &b = net.add(loopConfig("b", {"a"}), "p2p", nlohmann::json::object(), "ios", {{"n_max", 5}});
		registerProcess(*a.core, net.now(), 0, true);
		registerProcess(*a.core, net.now(), 3, false);
		registerProcess(*b.core, net.now(), 1, true);
		registerProcess(*b.core, net.now(), 2, false);
		CoreOutputs out;
		a.core->onLocalRequest(request("poll", {{"app", "heat"}, {"iteration", 1}, {"size", 2}, {"remaining", 500}}),
				       net.now(), out);
		a.core->onLocalRequest(request("app_report", {{"app", "heat"}, {"rank", 0}, {"iteration_times", {0.5}}}),
				       net.now(), out);
		CHECK(heatAt(*b.core, net.now())["size"] == 4);
		net.run(1.0); // two heartbeats of a
		const nlohmann::json heat = heatAt(*b.core, net.now());
		CHECK(heat["size"] == 2);
		CHECK(heat["remaining_iterations"] == 500);
		CHECK(heat["iteration_times"] == nlohmann::json::parse(R"([{"processes": 2, "seconds": 0.5}])"));
		CHECK(b.core->applications().at("heat").totalProcesses == 4); // the registry keeps what it was told

		// Figures from a peer that is not heat's root are not taken.
		Message claim = makeMessage("heartbeat", "c", 1);
		claim.update({{"endpoint", "tcp://c"}, {"profile", toJson(NodeProfile{})},
			      {"root_apps", {{"heat", {{"size", 9}}}}}});
		net.inject("b", encodeMessage(claim, 1));
		CHECK(heatAt(*b.core, net.now())["size"] == 2);

		// A work request from a node three times faster reaches b once its process has settled: ios splits
		// b's process into 4 (1 stays, 3 go), which n_max = 5 allows with 1 process elsewhere, not with 3.
		net.run(2.0);
		NodeProfile here;
		here.pw = 1.0;
		here.upw = 1.0;
		here.cores = 1;
		b.core->setLocalProfile(here);
		NodeProfile origin;
		origin.pw = 3.0;
		origin.apw = 1.0;
		origin.cores = 1;
		Message wrm = makeMessage("wrm", "c", 2);
		wrm.update({{"origin", "c"}, {"origin_endpoint", "tcp://c"}, {"origin_profile", toJson(origin)},
			    {"wrm_id", 1}, {"ttl", 3}, {"hops", 1}, {"visited", {"c"}}});
		net.inject("b", encodeMessage(wrm, 1));
		const std::vector<nlohmann::json> actions = b.eventsOf("action");
		REQUIRE(actions.size() >= 1);
		CHECK(actions.front()["kind"] == "split");
		CHECK(actions.front()["reasons"]["processes_elsewhere"] == 1);
		CHECK(actions.front()["params"].value("n", -1) == 4);

		// A result from the root says the new size before the root's next heartbeat does.
		Message result = makeMessage("reconf_result", "a", 3);
		result.update({{"app", "heat"}, {"request", 9}, {"origin", "a"}, {"ok", true}, {"op", "split"},
			       {"count", 1}, {"before", 2}, {"after", 3}});
		net.inject("b", encodeMessage(result, 1));
		CHECK(heatAt(*b.core, net.now())["size"] == 3);

		SUBCASE("the root gone, its figures go with it: b shows its registry's size again")
		{
			a.up = false;
			net.run(3.0);
			CHECK_FALSE(b.core->peers().count("a"));
			CHECK(heatAt(*b.core, net.now())["size"] == 4);
		}
		SUBCASE("rank 0 gone from the root, the root's next heartbeat says nothing of heat and b forgets")
		{
			a.core->onLocalRequest(request("deregister", {{"app", "heat"}, {"rank", 0}}), net.now(), out);
			net.run(1.0);
			CHECK(b.core->peers().count("a"));
			CHECK(heatAt(*b.core, net.now())["size"] == 4);
			CHECK(heatAt(*b.core, net.now())["remaining_iterations"] == nullptr);
		}
	}
}
