// SPDX-License-Identifier: Apache-2.0
// Decision module "swap": MPI process swapping for over-allocated applications
// (seed 002). The math is in policy/swap_policy.h; this file builds its slots
// from what the agent knows and turns the pairs into actions.
//
// Every tick, for each application with parked processes on this node:
//  - each local process is a slot on this node's processor: peak speed
//    PW/cores, total load UPW, own load the sum of the ownLoad of the
//    application's active processes here (all in shares of the node's CPU).
//    Every process here thus rates the same: swapping within a node gains
//    nothing, and the own-load exclusion keeps the process that runs from
//    making its own node look slower than an idle one.
//  - the registry knows only this node's processes. When the application has
//    active processes elsewhere (totalProcesses > active here), each alive
//    peer that reports malleable processes stands for one active process on a
//    processor with the peer's PW/cores, UPW, and an own load of one busy
//    core (min(UPW, 1/cores)), the share a CPU-bound process takes. Such a
//    swap names the peer (`deactivate_agent`); the application's root agent
//    knows which rank runs there.
//  - planSwaps() pairs the slowest active with the fastest parked while the
//    parked is faster by more than `hysteresis`, and leaves alone any local
//    process that changed state less than `min_residence` seconds ago.
// A proposed swap is not proposed again for `min_residence` seconds, or until
// the process it activates changes state.
// It never answers a WRM.
//
// Options (table "swap"):
//   hysteresis     0.1   swap only to a processor faster by more than this fraction
//   min_residence  30    seconds a process stays active or parked before it may swap
#include <algorithm>
#include <map>
#include <optional>

#include <malleo/config_table.h>
#include <malleo/decision_module.h>

#include "swap_policy.h"

namespace malleo {

namespace {

// Where a slot is: a local rank, or a peer standing for a remote active process.
struct SlotSource {
	std::optional<uint32_t> rank;
	std::string agent;
};

nlohmann::json loadJson(const policy::ProcessorLoad &load, double performance)
{
	return {{"peak_speed", load.peakSpeed},
		{"total_load", load.totalLoad},
		{"own_load", load.ownLoad},
		{"performance", performance}};
}

class SwapDecision : public DecisionModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		policy::SwapParams p = params_;
		ConfigTable t(table, "swap");
		t.number("hysteresis", p.hysteresis, 0, 100);
		t.number("min_residence", p.minResidence, 0, 86400);
		t.finish();
		if (!t.error().empty())
			return t.error();
		params_ = p;
		return {};
	}

	WorkVerdict onWorkRequest(const DecisionView &, const WorkRequest &request) override
	{
		return {
		    false,
		    {{"module", "swap"},
		     {"origin", request.origin},
		     {"why", "swap only chooses which processes of an over-allocated application "
			     "run; it never answers work requests"}},
		    {}};
	}

	std::vector<Action> onTick(const DecisionView &view) override;

private:
	std::vector<Action> planApp(const DecisionView &view, const ApplicationInfo &app);
	bool pending(const std::string &key, double now, double lastChange) const;

	policy::SwapParams params_;
	std::map<std::string, double> proposed_; // "app/rank" or "app@agent" -> when
};

bool SwapDecision::pending(const std::string &key, double now, double lastChange) const
{
	auto it = proposed_.find(key);
	return it != proposed_.end() && now - it->second < params_.minResidence &&
	       lastChange <= it->second;
}

std::vector<Action> SwapDecision::onTick(const DecisionView &view)
{
	const double now = view.overlay.now;
	std::erase_if(proposed_, [&](const auto &entry) {
		return now - entry.second >= params_.minResidence;
	});
	std::vector<Action> actions;
	for (const ApplicationInfo &app : view.apps) {
		bool parked = std::any_of(app.local.begin(), app.local.end(),
					  [](const ProcessInfo &p) { return !p.active; });
		if (!parked)
			continue;
		std::vector<Action> more = planApp(view, app);
		std::move(more.begin(), more.end(), std::back_inserter(actions));
	}
	return actions;
}

std::vector<Action> SwapDecision::planApp(const DecisionView &view, const ApplicationInfo &app)
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	const double now = view.overlay.now;
	const std::string self(view.overlay.self);

	double ownHere = 0.0;
	int64_t activeHere = 0;
	for (const ProcessInfo &p : app.local) {
		if (!p.active)
			continue;
		ownHere += p.ownLoad;
		++activeHere;
	}
	const policy::ProcessorLoad local{here.pw / std::max(here.cores, 1), here.upw, ownHere};

	std::vector<policy::SwapSlot> slots;
	std::vector<SlotSource> sources;
	for (const ProcessInfo &p : app.local) {
		std::string key = app.id + "/" + std::to_string(p.rank);
		if (pending(key, now, p.lastChange))
			continue;
		slots.push_back({slots.size(), local, p.active, p.lastChange});
		sources.push_back({p.rank, self});
	}
	if (app.totalProcesses > activeHere) {
		for (const PeerEntry &peer : view.overlay.alive) {
			if (peer.profile.processes <= 0 ||
			    pending(app.id + "@" + peer.id, now, 0.0))
				continue;
			const int cores = std::max(peer.profile.cores, 1);
			const policy::ProcessorLoad remote{peer.profile.pw / cores,
							   peer.profile.upw,
							   std::min(peer.profile.upw, 1.0 / cores)};
			// Its residence is unknown here: the root agent enforces it.
			slots.push_back({slots.size(), remote, true, now - params_.minResidence});
			sources.push_back({std::nullopt, peer.id});
		}
	}

	policy::SwapPlan plan = policy::planSwaps(slots, now, params_);
	std::vector<Action> actions;
	for (const policy::SwapPair &pair : plan.swaps) {
		const SlotSource &out = sources[pair.deactivate];
		const SlotSource &in = sources[pair.activate];
		nlohmann::json params = {
		    {"app", app.id},
		    {"deactivate", out.rank ? nlohmann::json(*out.rank) : nlohmann::json(nullptr)},
		    {"deactivate_agent", out.agent},
		    {"activate", *in.rank},
		    {"activate_agent", in.agent},
		};
		nlohmann::json reasons = {
		    {"slow_performance", pair.slowPerformance},
		    {"fast_performance", pair.fastPerformance},
		    {"ratio", pair.slowPerformance > 0
				  ? nlohmann::json(pair.fastPerformance / pair.slowPerformance)
				  : nlohmann::json(nullptr)},
		    {"hysteresis", params_.hysteresis},
		    {"min_residence", params_.minResidence},
		    {"slow", loadJson(slots[pair.deactivate].load, pair.slowPerformance)},
		    {"fast", loadJson(slots[pair.activate].load, pair.fastPerformance)},
		    {"pw_j", here.pw},
		    {"upw_j", here.upw},
		    {"cores_j", here.cores},
		    {"held_by_residence", plan.heldByResidence},
		    {"held_by_hysteresis", plan.heldByHysteresis},
		};
		proposed_[app.id + "/" + std::to_string(*in.rank)] = now;
		proposed_[out.rank ? app.id + "/" + std::to_string(*out.rank)
				   : app.id + "@" + out.agent] = now;
		actions.push_back({"swap", app.id, std::move(params), std::move(reasons)});
	}
	return actions;
}

} // namespace

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Decision, "swap", "1.0", malleo::SwapDecision)
