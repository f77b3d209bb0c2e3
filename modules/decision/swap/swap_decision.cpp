// SPDX-License-Identifier: Apache-2.0
// Decision module "swap": MPI process swapping for over-allocated applications
// (seed 002). The math is in policy/swap_policy.h; this file builds its slots
// from what the agent knows and turns the pairs into actions.
//
// Every tick, for each malleable application, two sides decide:
//  - where processes of it are parked (the spares' side): each local process
//    is a slot on this node's processor: peak speed PW/cores, times the share
//    of a core each process gets with the node's cores shared by the external
//    load (UPW x cores less the application's own ownLoad) and the
//    application's active processes here, one more for a parked slot (it
//    would join them). Seed 002 excludes the application's own load, which
//    on a processor per process keeps the process that runs from making its
//    own node look slower than an idle one; on a node of several cores it
//    rated a spare on a node the application fills as fast as one on an empty
//    core, and pulled processes onto it until it was oversubscribed
//    (heterogeneous: swap 574.7 s against static's 534.2, docs/notes/sim-policies.md). A
//    parked slot here never rates above an active one, so swapping within a
//    node gains nothing. When the application has active processes
//    elsewhere (totalProcesses > active here), each alive peer that reports
//    malleable processes stands for one active process on a processor with
//    the peer's PW/cores, UPW, and an own load of one busy core
//    (min(UPW, 1/cores)), the share a CPU-bound process takes. Such a swap
//    names the peer (`deactivate_agent`); the application's root agent knows
//    which rank runs there. This side sees a peer's peak speed, not its load:
//    on a peer of one core whose process shares it with other work, UPW is 1
//    either way.
//  - where processes of it run (the active side), which measures what the
//    spares' side cannot: each local active process is a slot with this
//    node's PW/cores, UPW, and its own measured share (ownLoad) as own load,
//    so everything else on the CPU, other programs and the application's
//    other processes alike, counts against it. Each alive peer is a
//    candidate inactive slot: PW/cores and UPW, all of which a process
//    activated there would compete with (own load 0). The swap names this
//    node's rank (`deactivate`, `deactivate_agent`) and the peer
//    (`activate_agent`); the bridge activates a spare there, or refuses when
//    the peer has none.
// On both sides planSwaps() pairs the slowest active with the fastest
// parked while the parked is faster by more than `hysteresis`, and leaves
// alone any local process that changed state less than `min_residence`
// seconds ago.
// A proposed swap is not proposed again for `min_residence` seconds, or until
// the process it activates changes state.
// A swap is a migration of one (agent/src/action_commands.cpp), which the bridge refuses when the node named to
// activate a process on has no spare of the application. What it said is kept (ios's refusal memory,
// refusal_memory.h): such a node is not named again for the application while that holds, and the process the
// refused swap would have moved may swap at once with the next fastest node. Seed 002's swapping manager knows
// where its spares are; an agent learns it from refusals.
// It never answers a WRM.
//
// Options (table "swap"):
//   hysteresis      0.1   swap only to a processor faster by more than this fraction
//   min_residence   30    seconds a process stays active or parked before it may swap
//   refusal_memory  60    seconds what the bridge's refusal said of a node's spares holds at most
#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include <malleo/config_table.h>
#include <malleo/decision_module.h>

#include "refusal_view.h"
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
		double memory = refusals_.expiry();
		ConfigTable t(table, "swap");
		t.number("hysteresis", p.hysteresis, 0, 100);
		t.number("min_residence", p.minResidence, 0, 86400);
		t.number("refusal_memory", memory, 0, 86400);
		t.finish();
		if (!t.error().empty())
			return t.error();
		params_ = p;
		refusals_.setExpiry(memory);
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
	void onCommandResult(const DecisionView &view, const CommandResult &result) override;

private:
	std::vector<Action> planApp(const DecisionView &view, const ApplicationInfo &app);
	std::vector<Action> planAway(const DecisionView &view, const ApplicationInfo &app);
	bool pending(const std::string &key, double now, double lastChange) const;
	bool noSpares(const DecisionView &view, const ApplicationInfo &app, const std::string &node) const;
	Action swapAction(const ApplicationInfo &app, const NodeProfile &here, const policy::SwapPlan &plan,
			  const policy::SwapPair &pair, const std::vector<policy::SwapSlot> &slots,
			  const std::vector<SlotSource> &sources, double now);

	policy::SwapParams params_;
	std::map<std::string, double> proposed_; // "app/rank" or "app@agent" -> when
	std::map<std::string, std::string> movedBy_; // "app@agent" a swap named to activate on -> the "app/rank" it moves
	policy::RefusalMemory refusals_{60.0};
};

void SwapDecision::onCommandResult(const DecisionView &view, const CommandResult &result)
{
	policy::learnResult(refusals_, view, result);
	if (result.ok || result.decision != "swap" || result.kind != "swap")
		return;
	// The process did not move: it may swap elsewhere now. The node it was to go to stays pending.
	if (const auto it = movedBy_.find(result.app + "@" + result.node); it != movedBy_.end())
		proposed_.erase(it->second);
}

// The bridge said `node` has no spare process of the application, and that still holds.
bool SwapDecision::noSpares(const DecisionView &view, const ApplicationInfo &app, const std::string &node) const
{
	const auto cap = refusals_.added(app.id, node, policy::appState(app), view.overlay.now);
	return cap && cap->most == 0;
}

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
	std::erase_if(movedBy_, [&](const auto &entry) { return !proposed_.contains(entry.first); });
	policy::forgetGone(refusals_, view);
	std::vector<Action> actions;
	for (const ApplicationInfo &app : view.apps) {
		bool parked = std::any_of(app.local.begin(), app.local.end(),
					  [](const ProcessInfo &p) { return !p.active; });
		std::vector<Action> more = parked ? planApp(view, app) : std::vector<Action>{};
		// One swap per application and tick: the root carries out one command at a time.
		if (more.empty() && app.malleable)
			more = planAway(view, app);
		std::move(more.begin(), more.end(), std::back_inserter(actions));
	}
	return actions;
}

std::vector<Action> SwapDecision::planAway(const DecisionView &view, const ApplicationInfo &app)
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	const double now = view.overlay.now;
	const std::string self(view.overlay.self);

	std::vector<policy::SwapSlot> slots;
	std::vector<SlotSource> sources;
	for (const ProcessInfo &p : app.local) {
		if (!p.active || pending(app.id + "/" + std::to_string(p.rank), now, p.lastChange))
			continue;
		const policy::ProcessorLoad load{here.pw / std::max(here.cores, 1), here.upw,
						 p.ownLoad / std::max(here.cores, 1)};
		slots.push_back({slots.size(), load, true, p.lastChange});
		sources.push_back({p.rank, self});
	}
	if (slots.empty())
		return {};
	for (const PeerEntry &peer : view.overlay.alive) {
		if (peer.id == self || pending(app.id + "@" + peer.id, now, 0.0) || noSpares(view, app, peer.id))
			continue;
		const policy::ProcessorLoad there{peer.profile.pw / std::max(peer.profile.cores, 1),
						  peer.profile.upw, 0.0};
		// A spare's residence there is not known here: the bridge activates one that is
		// parked.
		slots.push_back({slots.size(), there, false, now - params_.minResidence});
		sources.push_back({std::nullopt, peer.id});
	}

	policy::SwapPlan plan = policy::planSwaps(slots, now, params_);
	if (plan.swaps.empty())
		return {};
	const policy::SwapPair &pair = plan.swaps.front();
	const SlotSource &out = sources[pair.deactivate];
	const SlotSource &in = sources[pair.activate];
	const double ratio =
	    pair.slowPerformance > 0 ? pair.fastPerformance / pair.slowPerformance : 0.0;
	nlohmann::json params = {
	    {"app", app.id},	   {"deactivate", *out.rank},	 {"deactivate_agent", self},
	    {"activate", nullptr}, {"activate_agent", in.agent},
	};
	nlohmann::json reasons = {
	    {"side", "active"},
	    {"slow_performance", pair.slowPerformance},
	    {"fast_performance", pair.fastPerformance},
	    {"ratio", pair.slowPerformance > 0 ? nlohmann::json(ratio) : nlohmann::json(nullptr)},
	    {"hysteresis", params_.hysteresis},
	    {"min_residence", params_.minResidence},
	    {"slow", loadJson(slots[pair.deactivate].load, pair.slowPerformance)},
	    {"fast", loadJson(slots[pair.activate].load, pair.fastPerformance)},
	    {"held_by_residence", plan.heldByResidence},
	    {"why", fmt::format("rank {} here gets {:.2f} of a core (CPU {:.0f} % used, {:.0f} % "
				"of it its own); a "
				"spare on {} would get {:.2f} ({:.0f} % used there): {:.2f}x, "
				"above the hysteresis {:.2f}",
				*out.rank, pair.slowPerformance, 100 * here.upw,
				100 * slots[pair.deactivate].load.ownLoad, in.agent,
				pair.fastPerformance, 100 * slots[pair.activate].load.totalLoad,
				ratio, 1.0 + params_.hysteresis)},
	};
	proposed_[app.id + "/" + std::to_string(*out.rank)] = now;
	proposed_[app.id + "@" + in.agent] = now;
	movedBy_[app.id + "@" + in.agent] = app.id + "/" + std::to_string(*out.rank);
	return {{"swap", app.id, std::move(params), std::move(reasons)}};
}

std::vector<Action> SwapDecision::planApp(const DecisionView &view, const ApplicationInfo &app)
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	const double now = view.overlay.now;
	const std::string self(view.overlay.self);
	if (noSpares(view, app, self))
		return {}; // the bridge said no spare of the application is parked here (a run whose nodes are named otherwise)

	double ownHere = 0.0;
	int64_t activeHere = 0;
	for (const ProcessInfo &p : app.local) {
		if (!p.active)
			continue;
		ownHere += p.ownLoad;
		++activeHere;
	}
	// The node's cores are shared by everything else on it (external) and by the application's active processes
	// here: a spare activated here runs beside those, one more of them (seed 002's own-load exclusion assumes a
	// processor per process; on a node of several cores it would rate a spare on a node the application already
	// fills as fast as on an empty one, and pull processes onto it until it is oversubscribed).
	const int cores = std::max(here.cores, 1);
	const double peak = here.pw / cores;
	const double external = std::max(0.0, here.upw * cores - ownHere);
	auto sharing = [&](double processes) {
		// availablePerformance() = peak / (1 + total - own): peak times the share of a core each gets.
		const double share = std::min(1.0, cores / std::max(processes + external, 1e-9));
		const double own = ownHere / cores;
		return policy::ProcessorLoad{peak, own + 1.0 / share - 1.0, own};
	};
	const policy::ProcessorLoad running = sharing(static_cast<double>(activeHere));
	const policy::ProcessorLoad joining = sharing(static_cast<double>(activeHere + 1));

	std::vector<policy::SwapSlot> slots;
	std::vector<SlotSource> sources;
	for (const ProcessInfo &p : app.local) {
		std::string key = app.id + "/" + std::to_string(p.rank);
		if (pending(key, now, p.lastChange))
			continue;
		slots.push_back({slots.size(), p.active ? running : joining, p.active, p.lastChange});
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
	for (const policy::SwapPair &pair : plan.swaps)
		actions.push_back(swapAction(app, here, plan, pair, slots, sources, now));
	return actions;
}

// The swap of one of the plan's pairs, with its numbers; the rank it activates and the one it deactivates (or the
// peer standing for it) are pending from now.
Action SwapDecision::swapAction(const ApplicationInfo &app, const NodeProfile &here, const policy::SwapPlan &plan,
				const policy::SwapPair &pair, const std::vector<policy::SwapSlot> &slots,
				const std::vector<SlotSource> &sources, double now)
{
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
	return {"swap", app.id, std::move(params), std::move(reasons)};
}

} // namespace

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Decision, "swap", "1.0", malleo::SwapDecision)
