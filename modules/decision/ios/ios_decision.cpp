// SPDX-License-Identifier: Apache-2.0
// Decision module "ios": the transfer, split and merge policies of seed 001,
// section 5 (DESIGN.md, "The policies"). The math lives in split_policy.h,
// transfer_policy.h and merge_policy.h; this file maps what the agent knows
// onto their inputs and turns their plans into actions with their reasons.
//
// The answer to a work request is in ios_work_request.cpp, processes leaving a node in ios_leaving.cpp.
//
// Every tick: one APW sample of this node into a window of the last
// `stability_window` ticks, σ_i from it, σ from the peers' reported σ_j, and
// the merge policy; a merge folds the co-located processes of the malleable
// application with the most of them, enough to bring the node back to one
// process per core. A merge is proposed once per application until its local
// process count changes.
//
// Options (table "ios"):
//   theta                        0.05   a move must cut the predicted iteration time by more than this fraction
//   tolerance                    0.05   accepted predicted imbalance of a split
//   n_max                        1024   never split the application into more processes than this
//   epsilon1                     0.05   merge only while σ_i is below this
//   epsilon2                     0.05   and σ of the peers' σ_j is below this
//   ctxsw_threshold              5000   and the context-switch rate (per second) is above this
//   hold_down                    60     seconds after a split with no merge
//   stability_window             10     ticks of APW that σ_i is computed over (1..64)
//   work_per_unit                1.0    seconds one data unit takes per iteration on a power of 1
//   inter_node_seconds_per_byte  1e-9   cost of a byte between nodes
//   intra_node_seconds_per_byte  1e-10  cost of a byte within a node
//   evacuate_load                0.5    share of the node's cores used by processes of no application here
//                                       that makes the applications' processes leave it (0: never)
//   evacuate_ticks               3      ticks in a row the load must last before they leave
//   merge_retry                  5      seconds after which a merge not carried out is proposed again
//   settle                       2      seconds a process must have run here before a work request may take its
//                                       work: until then the node's measured load (UPW) does not show it
//   refusal_memory               60     seconds a cap learned from the bridge's refusal holds at most (below)
//   origin_units                 false  N_i and the origin's power from the WRM's `hosted` (below); false: N_i = 0
//   migration_only               false  seed 000's "migration only" comparison: a split the node could make of
//                                       whole processes (it has more than r) becomes a migration of r of them,
//                                       any other split is dropped, and no merge is proposed
//
// Departures from seed 001, because the agent now carries actions out:
//  - A node loaded by something else (evacuate_load) pushes its processes to the peer where they would get the
//    most CPU (its free cores, or a fair share beside the processes it runs), when that is more than theta above
//    what they get here: in the paper only idle nodes pull work, so a loaded node kept its processes.
//  - onDrain: a leaving node's processes merge into the application's other processes (one command, no spare
//    needed anywhere; the bridge gives their data to the others); when they are all the application has, they
//    migrate to the peers with the most free power, one peer after another if a migration is refused, then to any
//    node the bridge finds a place on. In the paper a leaving node's processes were not the policy's affair.
//  - The hold-down after a split counts from the split's result (ApplicationInfo.lastSplit), not from the
//    decision: a split refused, or waiting behind another command, does not hold merges back.
//  - A merge not carried out within merge_retry seconds is proposed again (the paper proposes once).
//  - What the bridge refused is not asked again (refusal_memory.h): a split or migration onto a node whose pool has
//    too few spare processes asks for at most the spares the bridge said it has, none when it has none; a merge the
//    bridge cannot make (the PCM C API lets only the last slots leave) takes off at most the processes it said may
//    leave. The caps hold until the application's size or its processes here change, or `refusal_memory` seconds.
//    The paper's nodes could always host more processes.
//  - How data is shared after a split or merge is the bridge's: with the agent's actions.node_weights each node
//    gets a share in proportion to its power, split evenly among its processes (the paper's pieces are equal).
//
#include "ios_decision.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include <malleo/config_table.h>

namespace malleo::ios {

void IosDecision::onCommandResult(const DecisionView &view, const CommandResult &result)
{
	policy::learnResult(refusals_, view, result);
}

std::string IosDecision::configure(const nlohmann::json &table)
{
	IosOptions o = options_;
	ConfigTable t(table, "ios");
	t.number("theta", o.theta, 0, 1);
	t.number("tolerance", o.tolerance, 0, 1);
	t.integer("n_max", o.nMax, 2, 1u << 20);
	t.number("epsilon1", o.merge.epsilon1, 0, 1);
	t.number("epsilon2", o.merge.epsilon2, 0, 1);
	t.number("ctxsw_threshold", o.merge.contextSwitchThreshold, 0, 1e9);
	t.number("hold_down", o.merge.holdDown, 0, 86400);
	t.integer("stability_window", o.stabilityWindow, 1,
		  policy::StabilityWindow::kCapacity);
	t.number("work_per_unit", o.costs.workPerUnit, 1e-9, 1e9);
	t.number("inter_node_seconds_per_byte", o.costs.interNodeSecondsPerByte, 0, 1);
	t.number("intra_node_seconds_per_byte", o.costs.intraNodeSecondsPerByte, 0, 1);
	t.number("evacuate_load", o.evacuateLoad, 0, 1);
	t.integer("evacuate_ticks", o.evacuateTicks, 1, 1000);
	t.boolean("migration_only", o.migrationOnly);
	t.number("merge_retry", o.mergeRetry, 0, 86400);
	t.number("settle", o.settle, 0, 3600);
	t.number("refusal_memory", o.refusalMemory, 0, 86400);
	t.boolean("origin_units", o.originUnits);
	t.finish();
	if (!t.error().empty())
		return t.error();
	// A new window length makes the old samples meaningless for σ_i.
	if (o.stabilityWindow != options_.stabilityWindow)
		window_ = policy::StabilityWindow(o.stabilityWindow);
	options_ = o;
	refusals_.setExpiry(o.refusalMemory);
	return {};
}

// The time between an application's reconfigurations, averaged over every application this node sees reconfigured.
void IosDecision::learnConfigurationLifetime(const DecisionView &view)
{
	std::map<std::string, double> seen;
	for (const ApplicationInfo &app : view.apps) {
		if (app.lastReconfiguration < 0)
			continue;
		seen[app.id] = app.lastReconfiguration;
		const auto before = lastReconfigurationSeen_.find(app.id);
		if (before == lastReconfigurationSeen_.end() || !(app.lastReconfiguration > before->second))
			continue;
		const double lifetime = app.lastReconfiguration - before->second;
		configurationLifetime_ = configurationLifetime_ < 0 ? lifetime
								    : configurationLifetime_ + 0.5 * (lifetime - configurationLifetime_);
	}
	lastReconfigurationSeen_ = std::move(seen);
}

// The node's load for the merge policy: the processes the registry counts or, when the profile knows more
// (non-registered ones), the profile's; and when the latest split here took effect.
IosDecision::NodeLoad IosDecision::nodeLoad(const DecisionView &view, const NodeProfile &here)
{
	NodeLoad load;
	// The hold-down after a split counts from the split's result (app.lastSplit), not from its proposal: a split
	// proposed and never carried out does not hold merges back.
	for (const ApplicationInfo &app : view.apps) {
		load.processes += activeCount(app);
		if (app.lastSplit >= 0)
			load.lastSplit = std::max(load.lastSplit.value_or(app.lastSplit), app.lastSplit);
	}
	load.processes = std::max<int64_t>(load.processes, here.processes);
	return load;
}

// How many of the application's processes the bridge said may leave (refusal_memory.h); no limit when it said
// nothing.
int64_t IosDecision::mayLeave(const DecisionView &view, const ApplicationInfo &app) const
{
	const auto cap = refusals_.removed(app.id, std::string(view.overlay.self), appState(app), view.overlay.now);
	return cap ? cap->most : std::numeric_limits<int64_t>::max();
}

// The malleable application with the most active processes here, at least two, not proposed a merge already and
// with processes that may leave.
const ApplicationInfo *IosDecision::mergeTarget(const DecisionView &view) const
{
	const ApplicationInfo *target = nullptr;
	for (const ApplicationInfo &app : view.apps) {
		int64_t count = activeCount(app);
		if (!app.malleable || count < 2 || mergeProposed_.count(app.id) || mayLeave(view, app) <= 0)
			continue;
		if (!target || count > activeCount(*target))
			target = &app;
	}
	return target;
}

// The merge of `target`'s processes here, enough of them to bring the node back to one process per core, with its
// numbers.
Action IosDecision::mergeAction(const DecisionView &view, const NodeProfile &here, const ApplicationInfo &target,
				const policy::MergeVerdict &verdict, int64_t processes, size_t peers)
{
	const int64_t count = activeCount(target);
	const int64_t excess = processes - here.cores;
	const int64_t wanted = std::max<int64_t>(1, count - excess);
	const int64_t into = std::max(wanted, count - mayLeave(view, target));
	nlohmann::json ranks = nlohmann::json::array();
	for (const ProcessInfo &p : target.local)
		if (p.active)
			ranks.push_back(p.rank);
	nlohmann::json reasons = {
	    {"why", fmt::format("stable node (σ_i {:.3f}, σ {:.3f}): {} processes on {} cores, {:.0f} context "
				"switches/s: {} of {} fold into {}",
				verdict.sigmaLocal, verdict.sigmaPeers, processes, here.cores, here.ctxswRate,
				target.id, count, into)},
	    {"apw_i", here.apw},
	    {"apw_mean", window_.mean()},
	    {"sigma_i", verdict.sigmaLocal},
	    {"sigma", verdict.sigmaPeers},
	    {"peers", peers},
	    {"samples", verdict.samples},
	    {"epsilon1", options_.merge.epsilon1},
	    {"epsilon2", options_.merge.epsilon2},
	    {"processes", processes},
	    {"cores", here.cores},
	    {"ctxsw_rate", here.ctxswRate},
	    {"ctxsw_threshold", options_.merge.contextSwitchThreshold},
	    {"hold_down", options_.merge.holdDown},
	    {"since_last_split", verdict.sinceLastSplit ? nlohmann::json(*verdict.sinceLastSplit)
							: nlohmann::json(nullptr)},
	    {"local_processes", count},
	};
	if (into != wanted) {
		reasons["into_wanted"] = wanted;
		reasons["may_leave"] = count - into;
	}
	mergeProposed_[target.id] = {count, view.overlay.now};
	return Action{"merge",
		      target.id,
		      {{"app", target.id}, {"ranks", ranks}, {"from", count}, {"into", into}},
		      std::move(reasons)};
}

std::vector<Action> IosDecision::onTick(const DecisionView &view)
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	window_.push(here.apw);
	policy::forgetGone(refusals_, view);
	// A split's iteration time is measured from its first iteration (the agent discounts the one that held it);
	// a few reports later its average tells.
	predictions_.observe(view, 5.0, 120.0);
	learnConfigurationLifetime(view);
	if (std::vector<Action> leave = evacuate(view); !leave.empty())
		return leave;

	std::vector<double> peerSigmas;
	for (const PeerEntry &peer : view.overlay.alive)
		peerSigmas.push_back(peer.profile.sigma);
	const NodeLoad load = nodeLoad(view, here);
	policy::MergeInput input{peerSigmas,	 load.processes,   here.cores,
				 here.ctxswRate, view.overlay.now, load.lastSplit};
	policy::MergeVerdict verdict = policy::decideMerge(window_, input, options_.merge);

	// Forget proposals whose application changed size or left, and those the application did not carry out
	// within merge_retry seconds (the root agent was busy with another command, or refused): propose again.
	std::erase_if(mergeProposed_, [&](const auto &entry) {
		auto it =
		    std::find_if(view.apps.begin(), view.apps.end(),
				 [&](const ApplicationInfo &a) { return a.id == entry.first; });
		return it == view.apps.end() || activeCount(*it) != entry.second.processes ||
		       view.overlay.now - entry.second.at >= options_.mergeRetry;
	});
	if (!verdict.merge || options_.migrationOnly)
		return {};
	const ApplicationInfo *target = mergeTarget(view);
	if (!target)
		return {};
	return {mergeAction(view, here, *target, verdict, load.processes, peerSigmas.size())};
}

} // namespace malleo::ios

MALLEO_MODULE(malleo::ModuleKind::Decision, "ios", "1.0", malleo::ios::IosDecision)
