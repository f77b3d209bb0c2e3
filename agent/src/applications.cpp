// SPDX-License-Identifier: Apache-2.0
// The registry of MPI processes on this node, and the decision module's tick.
// Processes register through the local endpoint and report deltas; the
// decision module sees the registry as a list of ApplicationInfo.
#include "core.h"

#include <algorithm>

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
	app.malleable = m["malleable"].get<bool>();
	app.totalProcesses = m["size"].get<int64_t>();
	if (rank == 0)
		app.rootAgent = config_.id;
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
		if (it->second.local.empty()) {
			emit({{"type", "app_gone"}, {"app", it->first}}, now, out);
			apps_.erase(it);
		}
	}
	return ack(config_.id, m);
}

Message Core::appsReply() const
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
		list.push_back({{"id", id},
				{"malleable", app.malleable},
				{"root_agent", app.rootAgent},
				{"size", app.totalProcesses},
				{"processes", std::move(processes)},
				{"iteration_times", std::move(sizes)}});
	}
	m["apps"] = std::move(list);
	return m;
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
