// SPDX-License-Identifier: Apache-2.0
// The loop from a decision to a running application (DESIGN.md, "Reconfiguration protocol"): an action becomes a
// command request (action_commands.h) sent to the agent hosting the application's rank 0, which owns its
// one-at-a-time lock: it queues the command for the coordinator's poll, or refuses with a reason; the bridge's
// result goes back to the agent that asked and to the agents of the nodes it names. Peers learn where each
// application's rank 0 is from the `roots` of hellos, welcomes and heartbeats.
#include "core.h"

#include <algorithm>

#include <fmt/format.h>

namespace malleo {

namespace {

// An agent may hear of an application's root from a peer that has since lost it; a stale entry is not trusted.
constexpr double kRootStaleAfter = 30.0;
constexpr std::size_t kRootsRemembered = 1024;
// Seconds a draining node must host no active process before it leaves.
constexpr double kDrainSettle = 1.0;

std::string whyOf(const Action &action)
{
	if (const auto why = action.reasons.find("why"); why != action.reasons.end() && why->is_string())
		return why->get<std::string>().substr(0, 256);
	return action.kind + " chosen by the decision module";
}

} // namespace

void Core::setModuleNames(nlohmann::json names)
{
	moduleNames_ = std::move(names);
	// The simulator names its modules by their names alone.
	const nlohmann::json decision = moduleNames_.value("decision", nlohmann::json::object());
	if (decision.is_string())
		decisionName_ = decision.get<std::string>();
	if (!decision.is_object())
		return;
	decisionName_ = decision.value("name", "");
	decisionAbiMinor_ = decision.value("abi_minor", uint32_t{MALLEO_MODULE_ABI_MINOR});
}

// ---------------------------------------------------------------- where rank 0 is

nlohmann::json Core::rootsHere() const
{
	nlohmann::json roots = nlohmann::json::array();
	for (const auto &[id, app] : apps_)
		if (app.malleable && hostsRank0(app) && roots.size() < kRootsMax)
			roots.push_back(id);
	return roots;
}

void Core::learnRoots(const Message &m, double now)
{
	const auto roots = m.find("roots");
	if (roots == m.end())
		return;
	const std::string &peer = m["from"].get_ref<const std::string &>();
	for (const nlohmann::json &app : *roots) {
		if (!app.is_string() || app.get_ref<const std::string &>().empty() ||
		    app.get_ref<const std::string &>().size() > kMaxIdLength)
			continue;
		if (rootOf_.size() >= kRootsRemembered && !rootOf_.count(app.get<std::string>()))
			continue;
		rootOf_[app.get<std::string>()] = {peer, now};
		// Only the root agent hears from the application's coordinator; its peers learn from it that the
		// processes they host can move.
		if (auto it = apps_.find(app.get<std::string>()); it != apps_.end())
			it->second.malleable = true;
	}
}

std::string Core::rootAgentOf(const std::string &appId) const
{
	if (auto it = apps_.find(appId); it != apps_.end() && hostsRank0(it->second))
		return ctx_.config.id;
	const auto seen = rootOf_.find(appId);
	if (seen == rootOf_.end() || !membership_.peers().count(seen->second.agent))
		return {};
	const double lastHeard = membership_.peers().at(seen->second.agent).lastHeard;
	return lastHeard - seen->second.heardAt < kRootStaleAfter ? seen->second.agent : std::string();
}

// ---------------------------------------------------------------- the deciding agent

void Core::carryOut(const Action &action, const char *trigger, double now, CoreOutputs &out)
{
	auto skip = [&](const std::string &why) {
		ctx_.counters.add("actions.not_carried_out");
		emit({{"type", "action_skipped"}, {"app", action.app}, {"kind", action.kind}, {"trigger", trigger},
		      {"why", why}},
		     now, out);
	};
	const auto registered = apps_.find(action.app);
	std::optional<ApplicationInfo> app;
	if (registered != apps_.end()) {
		app = registered->second;
		applyRootFigures(*app);
	}
	auto mapped = commandForAction(action, ctx_.config.id, app ? &*app : nullptr);
	if (const NoCommand *none = std::get_if<NoCommand>(&mapped)) {
		skip(none->why);
		return;
	}
	if (auto p = pending_.find(action.app); p != pending_.end()) {
		skip(fmt::format("request {} for '{}' still awaits its result from {}", p->second.id, action.app,
				 p->second.root));
		return;
	}
	// A person's force and a leaving node do not wait; the decisions do, so a load does not bounce processes
	// between nodes faster than the application can show what the last move gained.
	if (std::string(trigger) != "drain") {
		if (auto held = heldUntil_.find(action.app); held != heldUntil_.end() && now < held->second) {
			skip(fmt::format("hold-down: '{}' was reconfigured {:.1f} s ago (actions.hold_down {} s)",
					 action.app, now - (held->second - ctx_.config.holdDown), ctx_.config.holdDown));
			return;
		}
	}
	ask(action.app, std::get<Command>(mapped),
	    Asker{ctx_.config.id, 0, trigger, action.kind, whyOf(action), decisionName_}, now, out);
}

uint64_t Core::ask(const std::string &appId, const Command &command, Asker asker, double now,
		   CoreOutputs &out)
{
	asker.request = nextRequestId_++;
	const std::string root = rootAgentOf(appId);
	nlohmann::json event = commandFields(command);
	event.update({{"type", "reconf_request"}, {"app", appId}, {"request", asker.request}, {"root", root},
		      {"trigger", asker.trigger}, {"kind", asker.kind}, {"why", asker.why}});
	if (root.empty()) {
		ctx_.counters.add("requests.no_root");
		event["type"] = "action_skipped";
		event["why"] = fmt::format("no agent is known to host rank 0 of '{}'", appId);
		emit(std::move(event), now, out);
		return 0;
	}
	ctx_.counters.add("requests.sent");
	emit(std::move(event), now, out);
	pending_[appId] = {asker.request, root, now};
	if (root == ctx_.config.id) {
		if (auto refused = queue(appId, command, asker, now, out)) {
			Message told = resultMessage(appId, command, asker);
			told["ok"] = false;
			told["code"] = refused->first;
			told["text"] = refused->second;
			tellResult(std::move(told), now, out);
		}
		return asker.request;
	}
	Message m = envelope("reconf_request");
	m.update(commandFields(command));
	m["app"] = appId;
	m["request"] = asker.request;
	m["trigger"] = asker.trigger;
	m["kind"] = asker.kind;
	m["why"] = asker.why;
	m["decision"] = asker.decision;
	send(membership_.peers().at(root).endpoint, std::move(m), out);
	return asker.request;
}

void Core::expireRequests(double now, CoreOutputs &out)
{
	std::vector<std::string> recovered;
	for (const auto &[appId, c] : commands_)
		if (c.recoveredUntil > 0.0)
			recovered.push_back(appId);
	for (const std::string &appId : recovered)
		settleRecovered(appId, false, now, out);
	for (auto it = pending_.begin(); it != pending_.end();) {
		if (now - it->second.sentAt < ctx_.config.requestTimeout) {
			++it;
			continue;
		}
		ctx_.counters.add("requests.timed_out");
		emit({{"type", "reconf_timeout"}, {"app", it->first}, {"request", it->second.id},
		      {"root", it->second.root}, {"waited", now - it->second.sentAt}},
		     now, out);
		it = pending_.erase(it);
	}
}

// ---------------------------------------------------------------- the root agent

std::optional<std::pair<std::string, std::string>> Core::queue(const std::string &appId,
							       const Command &command, const Asker &asker,
							       double now, CoreOutputs &out)
{
	auto it = apps_.find(appId);
	if (it == apps_.end())
		return std::pair{std::string("unknown_app"), fmt::format("no application '{}' is registered here", appId)};
	const ApplicationInfo &app = it->second;
	if (!hostsRank0(app))
		return std::pair{std::string("not_root"),
				 fmt::format("rank 0 of '{}' is not registered here (its root agent: {}): ask that agent",
					     appId, app.rootAgent.empty() ? "unknown" : app.rootAgent)};
	if (!app.malleable)
		return std::pair{std::string("not_malleable"),
				 fmt::format("application '{}' is not malleable (no PCM bridge has polled)", appId)};
	if (auto c = commands_.find(appId); c != commands_.end())
		return std::pair{std::string("busy"),
				 fmt::format("application '{}' already has command {} ({}, {}, asked by {} for: {})", appId,
					     c->second.id, describeCommand(c->second.command),
					     c->second.sent ? "in flight" : "queued", c->second.asker.origin,
					     c->second.asker.why)};
	// A draining node is on its way out: what moves there would be stranded.
	if (!command.node.empty() && (membership_.drainingPeers().count(command.node) || (draining_ && command.node == ctx_.config.id)))
		return std::pair{std::string("draining"),
				 fmt::format("node '{}' is draining: nothing moves onto it", command.node)};
	// The root holds the application's hold-down too: requests from several agents must not add up.
	const bool decided = asker.trigger == "wrm" || asker.trigger == "tick";
	if (decided && app.lastReconfiguration >= 0 && now - app.lastReconfiguration < ctx_.config.holdDown)
		return std::pair{std::string("hold_down"),
				 fmt::format("'{}' was reconfigured {:.1f} s ago (actions.hold_down {} s)", appId,
					     now - app.lastReconfiguration, ctx_.config.holdDown)};

	AppCommand queued;
	queued.id = nextCommandId_++;
	queued.command = command;
	if (ctx_.config.nodeWeights && command.weights.empty() && command.nodeWeights.empty())
		queued.command.nodeWeights = powerWeights();
	queued.asker = asker;
	queued.queuedAt = now;
	nlohmann::json event = commandFields(command);
	event.update({{"type", "command_queued"}, {"app", appId}, {"command", queued.id}, {"origin", asker.origin},
		      {"trigger", asker.trigger}, {"why", asker.why}});
	commands_[appId] = std::move(queued);
	++commandChanges_;
	ctx_.counters.add("commands.queued");
	emit(std::move(event), now, out);
	return std::nullopt;
}

// Each node's power, as this agent last heard it, in thousandths (the bridge takes integers).
std::map<std::string, int64_t> Core::powerWeights() const
{
	auto weight = [](double pw) {
		return std::clamp<int64_t>(std::llround(pw * 1000.0), 1, kCommandWeightMax);
	};
	std::map<std::string, int64_t> weights;
	weights[ctx_.config.id] = weight(ctx_.local.pw);
	for (const auto &[id, peer] : membership_.peers())
		if (weights.size() < kCommandWeightsMax)
			weights[id] = weight(peer.profile.pw);
	return weights;
}

void Core::onReconfRequest(const Message &m, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	Asker asker{m["from"].get<std::string>(), m["request"].get<uint64_t>(), m["trigger"].get<std::string>(),
		    m.value("kind", std::string()),   m.value("why", std::string()),	  m.value("decision", std::string())};
	std::optional<std::pair<std::string, std::string>> refused;
	Command command;
	if (std::optional<std::string> problem = readCommand(m, command))
		refused = std::pair{std::string("bad_command"), "reconf_request: " + *problem};
	if (!refused)
		refused = queue(appId, command, asker, now, out);
	if (!refused)
		return;
	ctx_.counters.add("requests.refused." + refused->first);
	Message told = resultMessage(appId, command, asker);
	told["ok"] = false;
	told["code"] = refused->first;
	told["text"] = refused->second;
	if (command.op == Operation::None) {
		// Nothing of a command that does not check out is repeated back.
		for (const char *key : {"op", "count", "node", "from_node"})
			told.erase(key);
	}
	tellResult(std::move(told), now, out);
}

Message Core::resultMessage(const std::string &appId, const Command &command, const Asker &asker) const
{
	Message m = makeMessage("reconf_result", ctx_.config.id, 0);
	if (command.op != Operation::None) {
		m.update(commandFields(command));
		m.erase("weights");
	}
	m["app"] = appId;
	m["request"] = asker.request;
	m["origin"] = asker.origin;
	m["trigger"] = asker.trigger;
	m["kind"] = asker.kind;
	m["why"] = asker.why;
	m["decision"] = asker.decision;
	return m;
}

void Core::tellResult(Message result, double now, CoreOutputs &out)
{
	// The origin waits for it; the agents of the nodes it names see their processes come or go.
	std::vector<std::string> told;
	for (const char *key : {"origin", "node", "from_node"}) {
		const std::string agent = result.value(key, std::string());
		if (agent.empty() || agent == ctx_.config.id || !membership_.peers().count(agent) ||
		    std::find(told.begin(), told.end(), agent) != told.end())
			continue;
		told.push_back(agent);
		Message copy = result;
		copy["from"] = ctx_.config.id;
		copy["id"] = ctx_.nextMessageId++;
		send(membership_.peers().at(agent).endpoint, std::move(copy), out);
	}
	applyResult(result, now, out);
}

void Core::onReconfResult(const Message &m, double now, CoreOutputs &out)
{
	applyResult(m, now, out);
}

void Core::applyResult(const Message &m, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	const bool ok = m["ok"].get<bool>();
	if (m["origin"] == ctx_.config.id) {
		if (auto p = pending_.find(appId); p != pending_.end() && p->second.id == m["request"].get<uint64_t>())
			pending_.erase(p);
		if (ok)
			heldUntil_[appId] = now + ctx_.config.holdDown;
	}
	// The hold-down of every agent that hosts the application starts when the operation happened.
	if (auto it = apps_.find(appId); it != apps_.end() && ok) {
		it->second.lastReconfiguration = now;
		if (m.value("op", "") == "split")
			it->second.lastSplit = now;
	}
	resultToRootFigures(m);
	ctx_.counters.add(ok ? "results.ok" : "results.refused");
	nlohmann::json event = m;
	for (const char *key : {"v", "id", "from"})
		event.erase(key);
	event["type"] = "reconf_result";
	event["root"] = m["from"];
	emit(std::move(event), now, out);
	tellDecision(m, now);
}

// The decision module hears every result this agent is told of, so that it does not ask again for what the bridge
// just refused (decision_module.h, onCommandResult).
void Core::tellDecision(const Message &m, double now)
{
	// onCommandResult came with ABI 1.2: a module built against 1.1 or older has no such slot in its vtable.
	if (decisionAbiMinor_ < 2)
		return;
	CommandResult r;
	r.app = m["app"].get<std::string>();
	r.ok = m["ok"].get<bool>();
	r.askedHere = m["origin"] == ctx_.config.id;
	r.op = m.value("op", "");
	r.count = m.value("count", int64_t{0});
	r.node = m.value("node", "");
	r.fromNode = m.value("from_node", "");
	r.trigger = m.value("trigger", "");
	r.kind = m.value("kind", "");
	r.decision = m.value("decision", "");
	r.code = r.ok ? std::string() : m.value("code", "");
	r.text = m.value("text", "");
	if (const auto refusal = m.find("refusal"); refusal != m.end() && !r.ok) {
		r.refusal = (*refusal)["kind"].get<std::string>();
		r.most = refusal->value("most", int64_t{-1});
	}
	r.before = m.value("before", int64_t{-1});
	r.after = m.value("after", int64_t{-1});
	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	OverlayView v = membership_.view(now, alive, candidates);
	std::vector<ApplicationInfo> apps = applicationList();
	ctx_.counters.add("decisions.results_told");
	decision_.onCommandResult(DecisionView{v, apps}, r);
}

// ---------------------------------------------------------------- draining

// Every active process counts, a malleable application's or not: a drain is done when none computes here.
int64_t Core::activeHere() const
{
	int64_t n = 0;
	for (const auto &[id, app] : apps_)
		n += std::count_if(app.local.begin(), app.local.end(), [](const ProcessInfo &p) { return p.active; });
	return n;
}

void Core::drain(double now, double deadline, CoreOutputs &out)
{
	if (draining_)
		return;
	draining_ = true;
	drainStartedAt_ = now;
	drainDeadline_ = now + deadline;
	nextDecision_ = now; // the decision module is asked at once
	ctx_.counters.add("drain.started");
	emit({{"type", "draining"}, {"deadline", deadline}, {"active", activeHere()}}, now, out);
	decide(now, out);
}

bool Core::drainFinished(double now, CoreOutputs &out)
{
	if (drainDone_)
		return true;
	// Done once nothing has been active here for a moment: a process moving here when the drain began registers
	// a little after the operation that brought it.
	const int64_t active = activeHere();
	if (active > 0)
		quietSince_ = -1.0;
	else if (quietSince_ < 0)
		quietSince_ = now;
	if (active == 0 && now - quietSince_ >= kDrainSettle) {
		drainDone_ = true;
		ctx_.counters.add("drain.done");
		emit({{"type", "drained"}, {"took", now - drainStartedAt_}}, now, out);
	} else if (now >= drainDeadline_) {
		drainDone_ = true;
		ctx_.counters.add("drain.deadline");
		emit({{"type", "drain_deadline"}, {"active", active}}, now, out);
	}
	return drainDone_;
}

void Core::askDrain(const OverlayView &view, std::vector<ApplicationInfo> apps, double now, CoreOutputs &out)
{
	// An application whose request is out waits for its result: its processes may be on their way.
	std::erase_if(apps, [&](const ApplicationInfo &a) { return pending_.count(a.id) || commands_.count(a.id); });
	if (apps.empty())
		return;
	// onDrain came with ABI 1.1: a module built against 1.0 has no such slot in its vtable.
	if (decisionAbiMinor_ < 1) {
		if (!drainUnanswered_)
			emit({{"type", "action_skipped"}, {"trigger", "drain"},
			      {"why", "the decision module predates onDrain (ABI 1.0): processes stay until the deadline"}},
			     now, out);
		drainUnanswered_ = true;
		return;
	}
	for (const Action &action : decision_.onDrain(DecisionView{view, apps}))
		emitAction(action, "drain", now, out);
}

} // namespace malleo
