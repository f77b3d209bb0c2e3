// SPDX-License-Identifier: Apache-2.0
// The registry of MPI processes on this node, and the decision module's tick.
// Processes register through the local endpoint and report deltas; the
// decision module sees the registry as a list of ApplicationInfo.
#include "core.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "result_check.h"

namespace malleo {

namespace {

// Weight of a new iteration time in the running estimate of its configuration.
constexpr double kIterationWeight = 0.3;
// Seconds between an application's progress events.
constexpr double kProgressInterval = 1.0;

// A process's CPU share, its CPU time over wall time in the machine's cores (what libmalleo_pmpi measures), in the
// node's cores, the unit of upw × cores: a CPU slice of a quarter core has 1 core, and a process that keeps it busy
// used 0.25 of the machine's and 1 of the node's. cpuCores 0: the node's cores are the machine's.
double ownLoadInNodeCores(double cpuShare, int cores, double cpuCores)
{
	return cpuCores > 0 ? cpuShare * static_cast<double>(std::max(cores, 1)) / cpuCores : cpuShare;
}

Message ack(std::string_view self, const Message &request)
{
	Message m = makeMessage("ack", self, 0);
	m["re"] = request["id"];
	return m;
}

Message refusal(std::string_view self, const std::string &code, const std::string &text)
{
	Message m = makeMessage("error", self, 0);
	m["code"] = code;
	m["text"] = text;
	return m;
}

} // namespace

void Core::setNodeDescription(nlohmann::json description)
{
	description_ = std::move(description);
	const auto cpuCores = description_.find("cpu_cores");
	cpuCores_ = cpuCores != description_.end() && cpuCores->is_number() ? cpuCores->get<double>() : 0.0;
}

void Core::setLocalProfile(const NodeProfile &profile)
{
	ctx_.local = profile;
	ctx_.local.processes = 0;
	for (const auto &[id, app] : apps_)
		for (const ProcessInfo &p : app.local)
			ctx_.local.processes += p.active && app.malleable;
}

std::vector<ApplicationInfo> Core::applicationList() const
{
	std::vector<ApplicationInfo> list;
	for (const auto &[id, app] : apps_) {
		list.push_back(app);
		applyRootFigures(list.back());
	}
	return list;
}

Message Core::onRegister(const Message &m, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	auto it = apps_.find(appId);
	if (it == apps_.end()) {
		if (apps_.size() >= ctx_.config.maxApplications)
			return refusal(ctx_.config.id, "full", "this agent tracks no more applications");
		it = apps_.emplace(appId, ApplicationInfo{}).first;
		it->second.id = appId;
		emit({{"type", "app_registered"}, {"app", appId}}, now, out);
	}
	ApplicationInfo &app = it->second;
	uint32_t rank = m["rank"].get<uint32_t>();
	auto process = std::find_if(app.local.begin(), app.local.end(),
				    [&](const ProcessInfo &p) { return p.rank == rank; });
	if (process == app.local.end()) {
		if (app.local.size() >= ctx_.config.maxProcessesPerApp)
			return refusal(ctx_.config.id, "full", "too many processes for one application");
		app.local.push_back({});
		process = app.local.end() - 1;
	}
	process->rank = rank;
	process->pid = m["pid"].get<int64_t>();
	process->units = m.value("units", int64_t{1});
	process->lastChange = now;
	// Once the bridge polls, its count of active processes is the size, not the launch's world.
	if (!app.malleable)
		app.totalProcesses = m["size"].get<int64_t>();
	if (rank == 0)
		app.rootAgent = ctx_.config.id;
	// The profiler registers every process as not known to be malleable (only the PCM bridge
	// knows, and its coordinator's poll says so): a later register must not undo a poll.
	if (m["malleable"].get<bool>())
		app.malleable = true;
	std::sort(app.local.begin(), app.local.end(),
		  [](const ProcessInfo &a, const ProcessInfo &b) { return a.rank < b.rank; });
	ctx_.counters.add("apps.processes_registered");
	return ack(ctx_.config.id, m);
}

Message Core::onAppReport(const Message &m, double now, CoreOutputs &out)
{
	(void)out;
	auto it = apps_.find(m["app"].get<std::string>());
	uint32_t rank = m["rank"].get<uint32_t>();
	if (it == apps_.end())
		return refusal(ctx_.config.id, "unknown_app", "report before register");
	ApplicationInfo &app = it->second;
	auto process = std::find_if(app.local.begin(), app.local.end(),
				    [&](const ProcessInfo &p) { return p.rank == rank; });
	if (process == app.local.end())
		return refusal(ctx_.config.id, "unknown_rank", "report before register");

	if (m.contains("size"))
		app.totalProcesses = m["size"].get<int64_t>();
	if (m.contains("units"))
		process->units = m["units"].get<int64_t>();
	if (m.contains("bytes_local"))
		process->bytesLocal = std::max(0.0, m["bytes_local"].get<double>());
	if (m.contains("bytes_remote"))
		process->bytesRemote = std::max(0.0, m["bytes_remote"].get<double>());
	if (m.contains("cpu_share"))
		process->ownLoad = std::clamp(ownLoadInNodeCores(m["cpu_share"].get<double>(), ctx_.local.cores, cpuCores_),
					      0.0, kProfileCoresMax);
	if (m.contains("active") && m["active"].get<bool>() != process->active) {
		process->active = m["active"].get<bool>();
		process->lastChange = now;
	}
	// Iteration times: rank 0 speaks for the application (all ranks share
	// the iteration after its barrier).
	if (rank == 0 && m.contains("iteration_times")) {
		for (const nlohmann::json &t : m["iteration_times"]) {
			if (!t.is_number() || t.get<double>() <= 0)
				continue;
			double seconds = t.get<double>();
			// The first iteration after a reconfiguration held it: a size's sample is its computation.
			if (auto d = reconfigurationToDiscount_.find(app.id); d != reconfigurationToDiscount_.end()) {
				if (seconds > d->second)
					seconds -= d->second;
				reconfigurationToDiscount_.erase(d);
			}
			if (app.sizes.empty() || app.sizes.back().processes != app.totalProcesses)
				app.sizes.push_back({app.totalProcesses, seconds});
			else
				app.sizes.back().seconds += kIterationWeight * (seconds - app.sizes.back().seconds);
		}
		if (app.sizes.size() > kSizesKept)
			app.sizes.erase(app.sizes.begin(), app.sizes.end() - kSizesKept);
	}
	ctx_.counters.add("apps.reports");
	return ack(ctx_.config.id, m);
}

Message Core::onDeregister(const Message &m, double now, CoreOutputs &out)
{
	removeProcess(m["app"].get<std::string>(), m["rank"].get<uint32_t>(), "rank 0 deregistered", now, out);
	return ack(ctx_.config.id, m);
}

void Core::processGone(const std::string &appId, uint32_t rank, double now, CoreOutputs &out)
{
	auto it = apps_.find(appId);
	if (it == apps_.end())
		return;
	auto process = std::find_if(it->second.local.begin(), it->second.local.end(),
				    [&](const ProcessInfo &p) { return p.rank == rank; });
	if (process == it->second.local.end())
		return;
	ctx_.counters.add("apps.processes_gone");
	emit({{"type", "process_gone"}, {"app", appId}, {"rank", rank}, {"pid", process->pid}}, now, out);
	removeProcess(appId, rank, "rank 0 ended without deregistering", now, out);
}

void Core::removeProcess(const std::string &appId, uint32_t rank, const std::string &why, double now,
			 CoreOutputs &out)
{
	auto it = apps_.find(appId);
	if (it == apps_.end())
		return;
	std::erase_if(it->second.local, [&](const ProcessInfo &p) { return p.rank == rank; });
	// Without rank 0 here nothing would take the command or answer for it.
	if (rank == 0)
		dropCommand(it->first, "dropped", why, now, out);
	if (it->second.local.empty()) {
		emit({{"type", "app_gone"}, {"app", it->first}}, now, out);
		lastResults_.erase(it->first);
		progress_.erase(it->first);
		seats_.forget(it->first);
		reconfigurationToDiscount_.erase(it->first);
		rootFigures_.erase(it->first);
		apps_.erase(it);
	}
}

Message Core::appsReply(double now) const
{
	Message m = makeMessage("apps_reply", ctx_.config.id, 0);
	nlohmann::json list = nlohmann::json::array();
	for (const auto &[id, registered] : apps_) {
		ApplicationInfo app = registered;
		applyRootFigures(app);
		nlohmann::json processes = nlohmann::json::array();
		for (const ProcessInfo &p : app.local)
			processes.push_back({{"rank", p.rank},
					     {"pid", p.pid},
					     {"units", p.units},
					     {"active", p.active},
					     {"bytes_local", p.bytesLocal},
					     {"bytes_remote", p.bytesRemote},
					     {"cpu_share", p.ownLoad}});
		nlohmann::json sizes = nlohmann::json::array();
		for (const IterationSample &s : app.sizes)
			sizes.push_back({{"processes", s.processes}, {"seconds", s.seconds}});
		nlohmann::json command = nullptr;
		if (auto c = commands_.find(id); c != commands_.end()) {
			const AppCommand &cmd = c->second;
			command = commandFields(cmd.command);
			command.update({{"command", cmd.id},
					{"state", cmd.sent ? "sent" : "queued"},
					{"age", now - cmd.queuedAt},
					{"origin", cmd.asker.origin},
					{"trigger", cmd.asker.trigger},
					{"why", cmd.asker.why}});
		}
		auto result = lastResults_.find(id);
		list.push_back({{"id", id},
				{"malleable", app.malleable},
				{"root_agent", app.rootAgent},
				{"size", app.totalProcesses},
				{"processes", std::move(processes)},
				{"iteration_times", std::move(sizes)},
				{"remaining_iterations", app.remainingIterations >= 0 ? nlohmann::json(app.remainingIterations)
										 : nlohmann::json(nullptr)},
				{"redistribution_cost", app.redistributionCost > 0 ? nlohmann::json(app.redistributionCost)
										  : nlohmann::json(nullptr)},
				{"command", std::move(command)},
				{"last_result", result == lastResults_.end() ? nlohmann::json(nullptr)
									   : result->second}});
	}
	m["apps"] = std::move(list);
	return m;
}

std::vector<std::string> Core::knownApplications() const
{
	std::set<std::string> ids;
	for (const auto &[id, app] : apps_)
		ids.insert(id);
	for (const auto &[id, root] : rootOf_)
		if (!rootAgentOf(id).empty())
			ids.insert(id);
	return {ids.begin(), ids.end()};
}

Message Core::onForce(const Message &m, double now, CoreOutputs &out)
{
	std::string appId = m["app"].get_ref<const std::string &>();
	auto refuse = [&](const std::string &code, const std::string &text) {
		ctx_.counters.add("commands.refused." + code);
		return refusal(ctx_.config.id, code, text);
	};
	// The schema checked the fields' types and sizes; this is the rest of what makes a command (the same rules
	// the bridge applies to what it polls), refused as a field of this request.
	Command command;
	if (std::optional<std::string> problem = readCommand(m, command))
		return refuse("bad_field", "force: " + *problem);
	// A person types a program's name (heat2d_openmpi) more easily than its id (heat2d_openmpi-636354561): the one
	// known application whose id starts with what was given is meant; none or several, the refusal lists them.
	if (!apps_.count(appId) && rootAgentOf(appId).empty()) {
		const std::vector<std::string> known = knownApplications();
		std::vector<std::string> meant;
		for (const std::string &id : known)
			if (id.starts_with(appId))
				meant.push_back(id);
		if (meant.size() == 1)
			appId = meant.front();
		else if (meant.size() > 1)
			return refuse("unknown_app", fmt::format("'{}' could be any of {}: give the id", appId,
								 fmt::join(meant, ", ")));
		else
			return refuse("unknown_app",
				      fmt::format("no application '{}' is registered here or at a peer's; {}", appId,
						  known.empty() ? std::string("none is (malleo apps lists them once one "
									      "registers)")
								: fmt::format("the ones known here: {}",
									      fmt::join(known, ", "))));
	}
	Asker asker{ctx_.config.id, 0, "force", "force", "asked by a person (malleo force)", "-"};

	// Any agent takes a `force`: the one hosting rank 0 queues it, another routes it there as a request whose
	// result comes back here.
	auto it = apps_.find(appId);
	if (it == apps_.end() || !hostsRank0(it->second)) {
		const std::string root = rootAgentOf(appId);
		if (root.empty() || root == ctx_.config.id)
			return refuse(it == apps_.end() ? "unknown_app" : "not_root",
				      it == apps_.end()
					  ? fmt::format("no application '{}' is registered here or at a peer's", appId)
					  : fmt::format("rank 0 of '{}' is not registered here and no peer says it hosts it",
							appId));
		const uint64_t request = ask(appId, command, asker, now, out);
		Message reply = makeMessage("force_reply", ctx_.config.id, 0);
		reply["app"] = appId;
		reply["request"] = request;
		reply["routed_to"] = root;
		return reply;
	}
	if (auto refused = queue(appId, command, asker, now, out))
		return refuse(refused->first, refused->second);
	Message reply = makeMessage("force_reply", ctx_.config.id, 0);
	reply["app"] = appId;
	reply["command"] = commands_[appId].id;
	return reply;
}

Message Core::onPoll(const Message &m, const Requester &from, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	auto it = apps_.find(appId);
	if (it == apps_.end())
		return refusal(ctx_.config.id, "unknown_app", "poll before register (an agent that just restarted learns of the application at its processes' next report; otherwise libmalleo_pmpi is not preloaded)");
	// Only the application's coordinator takes its commands, or says its size and progress (coordinator_seat.cpp).
	const auto slot = commands_.find(appId);
	const uint64_t inFlight = slot != commands_.end() && slot->second.sent ? slot->second.id : 0;
	if (std::string refused = seats_.refusal(appId, from, inFlight, now); !refused.empty()) {
		ctx_.counters.add("commands.polls_refused.not_coordinator");
		return refusal(ctx_.config.id, "not_coordinator", refused);
	}
	seats_.take(appId, from, now);
	ctx_.counters.add("commands.polls");
	ApplicationInfo &app = it->second;
	// Only a PCM bridge polls, so the application can change its size; and its coordinator knows
	// the active processes, which the profiler's launch-time size does not (parked spares).
	app.malleable = true;
	if (m.contains("size"))
		app.totalProcesses = m["size"].get<int64_t>();
	// Said by the application (PCM_Remaining_iterations); a poll without it keeps what an earlier one said.
	if (m.contains("remaining"))
		app.remainingIterations = m["remaining"].get<int64_t>();
	progress(app, m["iteration"].get<int64_t>(), now, out);

	settleRecovered(appId, true, now, out);

	Message reply = makeMessage("command", ctx_.config.id, 0);
	reply["app"] = appId;
	auto c = commands_.find(appId);
	// An in-flight command is not handed out twice: its result frees the slot.
	if (c == commands_.end() || c->second.sent) {
		reply["command"] = 0;
		reply["op"] = "none";
		return reply;
	}
	AppCommand &command = c->second;
	command.sent = true;
	command.sentTo = from;
	command.sentToKnown = true;
	++commandChanges_;
	command.sentAt = now;
	reply.update(commandFields(command.command));
	reply["command"] = command.id;
	ctx_.counters.add("commands.sent");
	emit({{"type", "command_sent"}, {"app", appId}, {"command", command.id}, {"op", operationName(command.command.op)},
	      {"iteration", m["iteration"]}, {"waited", now - command.queuedAt}},
	     now, out);
	return reply;
}

Message Core::onResult(const Message &m, const Requester &from, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	const uint64_t id = m["command"].get<uint64_t>();
	auto c = commands_.find(appId);
	if (c == commands_.end() || c->second.id != id || !c->second.sent) {
		ctx_.counters.add("commands.unknown_results");
		return refusal(ctx_.config.id, "unknown_command",
			       fmt::format("no command {} of '{}' is in flight here", id, appId));
	}
	// A refused result leaves the command in flight: the coordinator it was handed to may still report.
	const AppCommand &slot = c->second;
	if (std::string refused = CoordinatorSeats::resultRefusal(slot.id, slot.sentTo, slot.sentToKnown, from);
	    !refused.empty()) {
		ctx_.counters.add("commands.results_refused.not_coordinator");
		return refusal(ctx_.config.id, "not_coordinator", refused);
	}
	const double maxDuration = c->second.recoveredUntil > 0.0 ? kRecoveredDurationMax : now - c->second.sentAt;
	if (std::optional<std::string> bad = checkResult(m, c->second.command, maxDuration)) {
		ctx_.counters.add("commands.results_refused.bad_result");
		return refusal(ctx_.config.id, "bad_result", fmt::format("result of command {} of '{}': {}", id, appId, *bad));
	}
	const bool ok = m["ok"].get<bool>();
	const AppCommand command = std::move(c->second);
	commands_.erase(c);
	++commandChanges_;
	// What a terminal or the log shows of it: no control characters.
	const std::string text = withoutControls(m.value("text", ""), kResultTextMax);
	nlohmann::json result = commandFields(command.command);
	result.update({{"command", id}, {"ok", ok}, {"text", text}, {"at", now - ctx_.startedAt},
		       {"trigger", command.asker.trigger}, {"why", command.asker.why},
		       {"decision", command.asker.decision}, {"origin", command.asker.origin}});
	for (const char *key : {"iteration", "before", "after", "duration", "bytes"})
		if (m.contains(key))
			result[key] = m[key];
	// The bridge's structured reason, its two known keys only (message_schema.cpp, checkRefusal).
	if (const auto refusal = m.find("refusal"); refusal != m.end() && !ok) {
		result["refusal"] = {{"kind", (*refusal)["kind"]}};
		if (refusal->contains("most"))
			result["refusal"]["most"] = (*refusal)["most"];
	}
	if (auto it = apps_.find(appId); it != apps_.end() && ok) {
		if (m.contains("after"))
			it->second.totalProcesses = m["after"].get<int64_t>();
		if (m.contains("duration") && m["duration"].get<double>() > 0) {
			it->second.redistributionCost = m["duration"].get<double>();
			reconfigurationToDiscount_[appId] = m["duration"].get<double>();
		}
	}
	if (ok)
		seats_.open(appId, command.command);
	ctx_.counters.add(ok ? "commands.ok" : "commands.failed");
	nlohmann::json event = result;
	event["type"] = "command_result";
	event["app"] = appId;
	emit(std::move(event), now, out);
	lastResults_[appId] = result;

	Message told = resultMessage(appId, command.command, command.asker);
	told["ok"] = ok;
	told["command"] = id;
	if (!ok)
		told["code"] = "failed";
	if (m.contains("text"))
		told["text"] = text;
	for (const char *key : {"iteration", "before", "after", "duration", "bytes"})
		if (m.contains(key))
			told[key] = m[key];
	if (result.contains("refusal"))
		told["refusal"] = result["refusal"];
	tellResult(std::move(told), now, out);
	return ack(ctx_.config.id, m);
}

// The application's throughput over time, for the event log and `malleo plot`: from the coordinator's polls, which
// carry its probe count wherever it runs (rank 0's own reports stop when it migrates away and parks).
void Core::progress(const ApplicationInfo &app, int64_t iteration, double now, CoreOutputs &out)
{
	Progress &p = progress_[app.id];
	if (p.at > 0 && iteration > p.iteration && now - p.at >= kProgressInterval) {
		const int64_t done = iteration - p.iteration;
		emit({{"type", "app_progress"}, {"app", app.id}, {"size", app.totalProcesses}, {"iteration", iteration},
		      {"iterations", done}, {"seconds", (now - p.at) / static_cast<double>(done)}},
		     now, out);
	} else if (p.at > 0 && iteration >= p.iteration) {
		return;
	}
	p = {iteration, now};
}

void Core::dropCommand(const std::string &appId, const std::string &code, const std::string &why, double now,
			CoreOutputs &out)
{
	auto c = commands_.find(appId);
	if (c == commands_.end())
		return;
	ctx_.counters.add("commands." + code);
	emit({{"type", "command_" + code}, {"app", appId}, {"command", c->second.id}, {"op", operationName(c->second.command.op)},
	      {"sent", c->second.sent}, {"why", why}},
	     now, out);
	Message told = resultMessage(appId, c->second.command, c->second.asker);
	told["ok"] = false;
	told["code"] = code;
	told["command"] = c->second.id;
	told["text"] = code + " before its result: " + why;
	commands_.erase(c);
	++commandChanges_;
	tellResult(std::move(told), now, out);
}

// Every decision interval the decision module is asked for actions: on its tick, or while the node drains, for
// those that take its processes away (reconfigurations.cpp).
void Core::decide(double now, CoreOutputs &out)
{
	if ((draining_ && drainFinished(now, out)) || now < nextDecision_)
		return;
	nextDecision_ = now + ctx_.config.decisionInterval;
	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	OverlayView v = membership_.view(now, alive, candidates);
	std::vector<ApplicationInfo> apps = applicationList();
	if (draining_) {
		askDrain(v, std::move(apps), now, out);
		return;
	}
	for (const Action &action : decision_.onTick(DecisionView{v, apps}))
		emitAction(action, "tick", now, out);
}

void Core::emitAction(const Action &action, const char *trigger, double now, CoreOutputs &out)
{
	ctx_.counters.add("actions." + action.kind);
	emit({{"type", "action"},
	      {"kind", action.kind},
	      {"app", action.app},
	      {"trigger", trigger},
	      {"params", action.params},
	      {"reasons", action.reasons}},
	     now, out);
	if (ctx_.config.act) {
		carryOut(action, trigger, now, out);
		return;
	}
	// Observation only: no result will say when a split happened, so its hold-down starts at the choice.
	if (action.kind == "split")
		if (auto it = apps_.find(action.app); it != apps_.end())
			it->second.lastSplit = now;
}

bool Core::hostsRank0(const ApplicationInfo &app) const
{
	return std::any_of(app.local.begin(), app.local.end(), [](const ProcessInfo &p) { return p.rank == 0; });
}

// What this node hosts of each application, its active processes' data units (seed 001's Nb_i) and the cores they use:
// the answering node shares the work of both (eq. 1) and does not give more to a node that already holds its share.
// Every application with active processes here, not only those known to be malleable: a non-root agent learns that
// from the root's heartbeat, which may come after its first request, and the answering node weighs only applications
// malleable in its own view. At most kHostedMax, by id.
nlohmann::json Core::hostedShares() const
{
	nlohmann::json hosted = nlohmann::json::object();
	for (const auto &[id, app] : apps_) {
		if (hosted.size() >= kHostedMax)
			break;
		int64_t units = 0;
		double load = 0.0;
		for (const ProcessInfo &p : app.local)
			if (p.active) {
				units += p.units;
				load += p.ownLoad;
			}
		// Within the schema's ranges, or the whole request would be refused.
		if (units > 0)
			hosted[id] = {{"units", std::min(units, static_cast<int64_t>(kUnitsMax))},
				      {"load", std::min(load, kProfileCoresMax)}};
	}
	return hosted;
}

} // namespace malleo
