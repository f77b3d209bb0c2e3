// SPDX-License-Identifier: Apache-2.0
// The registry of MPI processes on this node, and the decision module's tick.
// Processes register through the local endpoint and report deltas; the
// decision module sees the registry as a list of ApplicationInfo.
#include "core.h"

#include <algorithm>

#include <fmt/format.h>

namespace malleo {

namespace {

// Configurations remembered per application (the sweet-spot fit needs three).
constexpr std::size_t kSizesKept = 16;
// Weight of a new iteration time in the running estimate of its configuration.
constexpr double kIterationWeight = 0.3;

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

void Core::setLocalProfile(const NodeProfile &profile)
{
	local_ = profile;
	local_.processes = 0;
	for (const auto &[id, app] : apps_)
		for (const ProcessInfo &p : app.local)
			local_.processes += p.active && app.malleable;
}

std::vector<ApplicationInfo> Core::applicationList() const
{
	std::vector<ApplicationInfo> list;
	for (const auto &[id, app] : apps_)
		list.push_back(app);
	return list;
}

Message Core::onRegister(const Message &m, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	auto it = apps_.find(appId);
	if (it == apps_.end()) {
		if (apps_.size() >= config_.maxApplications)
			return refusal(config_.id, "full", "this agent tracks no more applications");
		it = apps_.emplace(appId, ApplicationInfo{}).first;
		it->second.id = appId;
		emit({{"type", "app_registered"}, {"app", appId}}, now, out);
	}
	ApplicationInfo &app = it->second;
	uint32_t rank = m["rank"].get<uint32_t>();
	auto process = std::find_if(app.local.begin(), app.local.end(),
				    [&](const ProcessInfo &p) { return p.rank == rank; });
	if (process == app.local.end()) {
		if (app.local.size() >= config_.maxProcessesPerApp)
			return refusal(config_.id, "full", "too many processes for one application");
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
		app.rootAgent = config_.id;
	// The profiler registers every process as not known to be malleable (only the PCM bridge
	// knows, and its coordinator's poll says so): a later register must not undo a poll.
	if (m["malleable"].get<bool>())
		app.malleable = true;
	std::sort(app.local.begin(), app.local.end(),
		  [](const ProcessInfo &a, const ProcessInfo &b) { return a.rank < b.rank; });
	counters_.add("apps.processes_registered");
	return ack(config_.id, m);
}

Message Core::onAppReport(const Message &m, double now, CoreOutputs &out)
{
	(void)out;
	auto it = apps_.find(m["app"].get<std::string>());
	uint32_t rank = m["rank"].get<uint32_t>();
	if (it == apps_.end())
		return refusal(config_.id, "unknown_app", "report before register");
	ApplicationInfo &app = it->second;
	auto process = std::find_if(app.local.begin(), app.local.end(),
				    [&](const ProcessInfo &p) { return p.rank == rank; });
	if (process == app.local.end())
		return refusal(config_.id, "unknown_rank", "report before register");

	if (m.contains("size"))
		app.totalProcesses = m["size"].get<int64_t>();
	if (m.contains("units"))
		process->units = m["units"].get<int64_t>();
	if (m.contains("bytes_local"))
		process->bytesLocal = std::max(0.0, m["bytes_local"].get<double>());
	if (m.contains("bytes_remote"))
		process->bytesRemote = std::max(0.0, m["bytes_remote"].get<double>());
	if (m.contains("cpu_share"))
		process->ownLoad = std::clamp(m["cpu_share"].get<double>(), 0.0, 1.0);
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
			if (app.sizes.empty() || app.sizes.back().processes != app.totalProcesses)
				app.sizes.push_back({app.totalProcesses, seconds});
			else
				app.sizes.back().seconds += kIterationWeight * (seconds - app.sizes.back().seconds);
		}
		if (app.sizes.size() > kSizesKept)
			app.sizes.erase(app.sizes.begin(), app.sizes.end() - kSizesKept);
	}
	counters_.add("apps.reports");
	return ack(config_.id, m);
}

Message Core::onDeregister(const Message &m, double now, CoreOutputs &out)
{
	auto it = apps_.find(m["app"].get<std::string>());
	if (it != apps_.end()) {
		uint32_t rank = m["rank"].get<uint32_t>();
		std::erase_if(it->second.local, [&](const ProcessInfo &p) { return p.rank == rank; });
		// Without rank 0 here nothing would take the command or answer for it.
		if (rank == 0)
			dropCommand(it->first, "rank 0 deregistered", now, out);
		if (it->second.local.empty()) {
			emit({{"type", "app_gone"}, {"app", it->first}}, now, out);
			lastResults_.erase(it->first);
			apps_.erase(it);
		}
	}
	return ack(config_.id, m);
}

Message Core::appsReply(double now) const
{
	Message m = makeMessage("apps_reply", config_.id, 0);
	nlohmann::json list = nlohmann::json::array();
	for (const auto &[id, app] : apps_) {
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
			command = {{"command", cmd.id},
				   {"op", cmd.op},
				   {"count", cmd.count},
				   {"state", cmd.sent ? "sent" : "queued"},
				   {"age", now - cmd.queuedAt}};
			if (!cmd.node.empty())
				command["node"] = cmd.node;
			if (!cmd.weights.empty())
				command["weights"] = cmd.weights;
		}
		auto result = lastResults_.find(id);
		list.push_back({{"id", id},
				{"malleable", app.malleable},
				{"root_agent", app.rootAgent},
				{"size", app.totalProcesses},
				{"processes", std::move(processes)},
				{"iteration_times", std::move(sizes)},
				{"command", std::move(command)},
				{"last_result", result == lastResults_.end() ? nlohmann::json(nullptr)
									   : result->second}});
	}
	m["apps"] = std::move(list);
	return m;
}

Message Core::onForce(const Message &m, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	const std::string &op = m["op"].get_ref<const std::string &>();
	auto refuse = [&](const std::string &code, const std::string &text) {
		counters_.add("commands.refused." + code);
		return refusal(config_.id, code, text);
	};
	// The schema checked the fields' types and sizes; this is the rest of what makes a command (the same rules
	// the bridge applies to what it polls), refused as a field of this request.
	if (std::optional<std::string> problem = checkCommand(m))
		return refuse("bad_field", "force: " + *problem);
	const int64_t count = m["count"].get<int64_t>();
	const std::string node = m.value("node", std::string());
	std::vector<int64_t> weights;
	if (m.contains("weights"))
		weights = m["weights"].get<std::vector<int64_t>>();

	auto it = apps_.find(appId);
	if (it == apps_.end())
		return refuse("unknown_app", fmt::format("no application '{}' is registered here", appId));
	const ApplicationInfo &app = it->second;
	if (!app.malleable)
		return refuse("not_malleable",
			      fmt::format("application '{}' is not malleable (no PCM bridge has polled)", appId));
	// Only the agent hosting rank 0 starts a reconfiguration: rank 0 is the coordinator that polls.
	if (std::none_of(app.local.begin(), app.local.end(), [](const ProcessInfo &p) { return p.rank == 0; }))
		return refuse("not_root", fmt::format("rank 0 of '{}' is not registered here (its root agent: "
						      "{}): ask that agent",
						      appId, app.rootAgent.empty() ? "unknown" : app.rootAgent));
	if (auto c = commands_.find(appId); c != commands_.end())
		return refuse("busy", fmt::format("application '{}' already has command {} ({} {}, {})", appId,
						  c->second.id, c->second.op, c->second.count,
						  c->second.sent ? "in flight" : "queued"));

	AppCommand command;
	command.id = nextCommandId_++;
	command.op = op;
	command.count = count;
	command.node = node;
	command.weights = std::move(weights);
	command.queuedAt = now;
	nlohmann::json event = {{"type", "command_queued"}, {"app", appId}, {"command", command.id},
				{"op", op}, {"count", count}};
	if (!node.empty())
		event["node"] = node;
	if (!command.weights.empty())
		event["weights"] = command.weights;
	commands_[appId] = std::move(command);
	counters_.add("commands.queued");
	emit(std::move(event), now, out);

	Message reply = makeMessage("force_reply", config_.id, 0);
	reply["app"] = appId;
	reply["command"] = commands_[appId].id;
	return reply;
}

Message Core::onPoll(const Message &m, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	auto it = apps_.find(appId);
	if (it == apps_.end())
		return refusal(config_.id, "unknown_app", "poll before register (is libmalleo_pmpi preloaded?)");
	counters_.add("commands.polls");
	ApplicationInfo &app = it->second;
	// Only a PCM bridge polls, so the application can change its size; and its coordinator knows
	// the active processes, which the profiler's launch-time size does not (parked spares).
	app.malleable = true;
	if (m.contains("size"))
		app.totalProcesses = m["size"].get<int64_t>();

	Message reply = makeMessage("command", config_.id, 0);
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
	command.sentAt = now;
	reply["command"] = command.id;
	reply["op"] = command.op;
	reply["count"] = command.count;
	if (!command.node.empty())
		reply["node"] = command.node;
	if (!command.weights.empty())
		reply["weights"] = command.weights;
	counters_.add("commands.sent");
	emit({{"type", "command_sent"}, {"app", appId}, {"command", command.id}, {"op", command.op},
	      {"iteration", m["iteration"]}, {"waited", now - command.queuedAt}},
	     now, out);
	return reply;
}

Message Core::onResult(const Message &m, double now, CoreOutputs &out)
{
	const std::string &appId = m["app"].get_ref<const std::string &>();
	const uint64_t id = m["command"].get<uint64_t>();
	auto c = commands_.find(appId);
	if (c == commands_.end() || c->second.id != id || !c->second.sent) {
		counters_.add("commands.unknown_results");
		return refusal(config_.id, "unknown_command",
			       fmt::format("no command {} of '{}' is in flight here", id, appId));
	}
	const bool ok = m["ok"].get<bool>();
	nlohmann::json result = {{"command", id},   {"op", c->second.op}, {"count", c->second.count},
				 {"ok", ok},	    {"text", m.value("text", "")},
				 {"at", now - startedAt_}};
	for (const char *key : {"iteration", "before", "after", "duration", "bytes"})
		if (m.contains(key))
			result[key] = m[key];
	if (auto it = apps_.find(appId); it != apps_.end() && ok) {
		ApplicationInfo &app = it->second;
		app.lastReconfiguration = now;
		if (c->second.op == "split")
			app.lastSplit = now;
		if (m.contains("after"))
			app.totalProcesses = m["after"].get<int64_t>();
		if (m.contains("duration") && m["duration"].get<double>() > 0)
			app.redistributionCost = m["duration"].get<double>();
	}
	commands_.erase(c);
	counters_.add(ok ? "commands.ok" : "commands.failed");
	nlohmann::json event = result;
	event["type"] = "command_result";
	event["app"] = appId;
	emit(std::move(event), now, out);
	lastResults_[appId] = std::move(result);
	return ack(config_.id, m);
}

void Core::dropCommand(const std::string &appId, const char *why, double now, CoreOutputs &out)
{
	auto c = commands_.find(appId);
	if (c == commands_.end())
		return;
	counters_.add("commands.dropped");
	emit({{"type", "command_dropped"}, {"app", appId}, {"command", c->second.id}, {"op", c->second.op},
	      {"why", why}},
	     now, out);
	commands_.erase(c);
}

void Core::decide(double now, CoreOutputs &out)
{
	if (now < nextDecision_)
		return;
	nextDecision_ = now + config_.decisionInterval;
	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	OverlayView v = view(now, alive, candidates);
	std::vector<ApplicationInfo> apps = applicationList();
	for (const Action &action : decision_.onTick(DecisionView{v, apps}))
		emitAction(action, "tick", now, out);
}

void Core::emitAction(const Action &action, const char *trigger, double now, CoreOutputs &out)
{
	counters_.add("actions." + action.kind);
	emit({{"type", "action"},
	      {"kind", action.kind},
	      {"app", action.app},
	      {"trigger", trigger},
	      {"params", action.params},
	      {"reasons", action.reasons}},
	     now, out);
	if (action.kind == "split") {
		auto it = apps_.find(action.app);
		if (it != apps_.end())
			it->second.lastSplit = now;
	}
}

} // namespace malleo
