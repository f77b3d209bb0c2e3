// SPDX-License-Identifier: Apache-2.0
// Decision module "ios": the transfer, split and merge policies of seed 001,
// section 5 (DESIGN.md, "The policies"). The math lives in split_policy.h,
// transfer_policy.h and merge_policy.h; this file maps what the agent knows
// onto their inputs and turns their plans into actions with their reasons.
//
// A WRM from an idle origin i reaches this node j. For each malleable
// application with active processes here:
//  - N_j is the sum of the data units of its active local processes. N_i is
//    0 by default: an origin asking for work is taken to hold none of this
//    application (below for why). With `origin_units`, N_i is what the WRM
//    says the origin hosts (`hosted`), N_total = N_i + N_j, and eq. 3-5 give
//    what this node should give: Nb_j − Na_j. When that is within the
//    tolerance of N_total, the origin already holds its share and gets
//    nothing (it looks idle because its processes wait for this node's). The
//    origin's power for the application is then A_i·PW_i, A_i = APW_i plus
//    the share of its cores the application's processes there use (`hosted`'s
//    load): APW_i alone would rate an origin whose process keeps one of its
//    cores busy as if that core were not the application's.
//    Why not by default: in the simulator it stops the growth that N_i = 0
//    gives by accident: two dual-core nodes each running one process both
//    hold their share of eq. 1 and neither gets a second process (Fig. 14:
//    441.1 s against 292.2 s; sim/README.md has the table).
//  - ρ' = (Nb_j − Na_j) / N_j, the fraction of this node's units to give
//    (ρ = A_i·PW_i / (A_i·PW_i + UPW_j·PW_j) when N_i = 0), and the split
//    policy give the smallest n ≥ N_j that can be shared within the
//    tolerance. n > N_j means there are too few processes to reach it:
//    propose a split into n (l stay, r go to the origin) and a transfer of the
//    r new processes, if moving them gains more than θ. The r pieces are
//    identical, so their gain is that of moving them as one block of r units
//    of size N_j/n.
//  - Otherwise the transfer policy ranks the local processes by gain and
//    moves those above θ, at most N_transfer units.
// The gain maps each process's bytes as: bytes with the origin = 0 (what it
// sends there is not measured per peer), bytes with processes on this node =
// bytesLocal.
// bytesRemote go to third nodes and stay inter-node whether the process moves
// or not, so they do not change the difference the gain measures.
// The application whose plan has the largest gain is the answer; every
// application considered is listed in the verdict's reasons.
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
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include <malleo/config_table.h>

namespace malleo::ios {

namespace {

const char *splitStatusName(policy::SplitStatus status)
{
	switch (status) {
	case policy::SplitStatus::Found:
		return "found";
	case policy::SplitStatus::NoneWithinLimit:
		return "none-within-n_max";
	case policy::SplitStatus::InvalidInput:
		return "invalid-input";
	}
	return "unknown";
}

const char *transferStopName(policy::TransferStop stop)
{
	switch (stop) {
	case policy::TransferStop::BudgetReached:
		return "budget-reached";
	case policy::TransferStop::BelowThreshold:
		return "below-theta";
	case policy::TransferStop::NoCandidates:
		return "no-candidate-fits";
	case policy::TransferStop::NothingToTransfer:
		return "nothing-to-transfer";
	case policy::TransferStop::InvalidInput:
		return "invalid-input";
	}
	return "unknown";
}

} // namespace

int64_t activeCount(const ApplicationInfo &app)
{
	return std::count_if(app.local.begin(), app.local.end(),
			     [](const ProcessInfo &p) { return p.active; });
}

policy::AppState appState(const ApplicationInfo &app)
{
	return {app.totalProcesses, activeCount(app)};
}

void IosDecision::onCommandResult(const DecisionView &view, const CommandResult &result)
{
	policy::AppState state;
	for (const ApplicationInfo &app : view.apps)
		if (app.id == result.app)
			state = appState(app);
	refusals_.learn({result.app, result.ok, result.op, result.count, result.node, result.fromNode, result.refusal,
			 result.most, result.before, result.after},
			state, view.overlay.now);
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

WorkVerdict IosDecision::onWorkRequest(const DecisionView &view, const WorkRequest &request)
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	const NodeProfile &origin = request.originProfile;
	WorkVerdict v;
	v.reasons = {{"module", "ios"},		{"origin", request.origin},
		     {"apw_i", origin.apw},	{"pw_i", origin.pw},
		     {"upw_j", here.upw},	{"pw_j", here.pw},
		     {"theta", options_.theta}, {"tolerance", options_.tolerance}};
	if (!(origin.apw * origin.pw > 0)) {
		v.reasons["why"] = "the origin has no free power (APW_i·PW_i = 0)";
		return v;
	}
	if (!(here.upw * here.pw > 0)) {
		v.reasons["why"] = "this node uses no power (UPW_j·PW_j = 0): nothing to give";
		return v;
	}

	nlohmann::json considered = nlohmann::json::array();
	std::optional<AppPlan> best;
	for (const ApplicationInfo &app : view.apps) {
		if (!app.malleable)
			continue;
		AppPlan plan = planFor(view, request, app);
		considered.push_back(plan.summary);
		if (!plan.actions.empty() && (!best || plan.gain > best->gain))
			best = std::move(plan);
	}
	v.reasons["apps"] = considered;
	if (!best) {
		v.reasons["why"] =
		    considered.empty()
			? "no malleable application on this node"
			: "no malleable application has work worth moving to the origin";
		return v;
	}
	v.answer = true;
	for (Action &a : best->actions)
		a.reasons["why"] = fmt::format("work request from {} (APW {:.2f}, PW {:.2f}): {} gains {:.0f} %",
					       request.origin, origin.apw, origin.pw, a.kind, 100 * best->gain);
	v.reasons["chosen"] = best->summary["app"];
	v.reasons["gain"] = best->gain;
	v.actions = std::move(best->actions);
	return v;
}

AppPlan IosDecision::planFor(const DecisionView &view, const WorkRequest &request,
			     const ApplicationInfo &app) const
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	const NodeProfile &origin = request.originProfile;
	int64_t unitsHere = 0;
	double bytesLocal = 0.0;
	double newest = -std::numeric_limits<double>::infinity();
	for (const ProcessInfo &p : app.local) {
		if (!p.active)
			continue;
		unitsHere += p.units;
		bytesLocal += p.bytesLocal;
		newest = std::max(newest, p.lastChange);
	}
	// What the origin said it hosts of this application (an agent from before `hosted` says nothing): Nb_i, and the
	// cores its processes there use.
	const auto hosted = request.hosted.find(app.id);
	const HostedShare there =
	    hosted == request.hosted.end() || !options_.originUnits ? HostedShare{} : hosted->second;
	const int64_t unitsThere = std::max<int64_t>(0, there.units);
	AppPlan plan;
	plan.summary = {{"app", app.id}, {"n_i", unitsThere}, {"n_j", unitsHere}};
	if (unitsHere == 0) {
		plan.summary["outcome"] = "no active process here";
		return plan;
	}
	// ρ comes from UPW, the node's CPU use over the last profile interval: a process that started or arrived
	// within it is not (fully) in that figure, and a plan made now would misjudge what the node gives away.
	if (view.overlay.now - newest < options_.settle) {
		plan.summary["outcome"] = fmt::format("a process started here {:.1f} s ago: the node's load does not "
						      "show it yet (settle {:g} s)",
						      view.overlay.now - newest, options_.settle);
		return plan;
	}

	// The share of the origin's power the application can have: what is free there (APW_i, the paper's) and, when
	// it already runs there, what its processes use. Counting only the free part would rate an origin whose
	// processes keep one of its cores busy as a core weaker than it is for them.
	const double originCores = std::max(origin.cores, 1);
	const double originShare = std::min(1.0, origin.apw + std::max(0.0, there.load) / originCores);
	policy::TransferInput base;
	base.requester = {unitsThere, origin.pw, originShare};
	base.receiver = {unitsHere, here.pw, here.upw};
	base.costs = options_.costs;
	base.theta = options_.theta;

	const double rho = policy::powerRatio(originShare, origin.pw, here.upw, here.pw);
	// Eq. 1-5 over both nodes' units: this node gives Nb_j − Na_j, the share ρ of N_total the origin lacks. With
	// Nb_i = 0 that is ρ·Nb_j, as before; an origin that already holds its share (within the tolerance) gets nothing:
	// it only looks idle, its processes waiting for this node's (a transfer back and forth, issue 27).
	const policy::TransferShares shares = policy::transferShares(base.requester, base.receiver);
	double rhoGive = rho;
	if (unitsThere > 0) {
		plan.summary["na_i"] = shares.targetRequester;
		plan.summary["load_i"] = there.load;
		if (!(shares.exactTransfer > options_.tolerance * static_cast<double>(shares.nTotal))) {
			plan.summary["outcome"] = fmt::format("the origin already hosts its share ({} of {} units, its "
							      "share {:.2f})",
							      unitsThere, shares.nTotal, shares.targetRequester);
			return plan;
		}
		rhoGive = shares.exactTransfer / static_cast<double>(unitsHere);
	}
	// n_max bounds the whole application: the pieces made here add to its processes on other nodes.
	const int64_t activeHere = activeCount(app);
	const int64_t elsewhere = std::max<int64_t>(app.totalProcesses, activeHere) - activeHere;
	const int64_t nMaxHere = options_.nMax - elsewhere;
	policy::SplitPlan split = policy::planSplit({unitsHere, rhoGive, options_.tolerance, nMaxHere});
	nlohmann::json reasons = {
	    {"apw_i", origin.apw},
	    {"pw_i", origin.pw},
	    {"load_i", there.load},
	    {"upw_j", here.upw},
	    {"pw_j", here.pw},
	    {"n_i", unitsThere},
	    {"n_j", unitsHere},
	    {"n_total", shares.nTotal},
	    {"na_i", shares.targetRequester},
	    {"rho", rho},
	    {"rho_give", rhoGive},
	    {"tolerance", options_.tolerance},
	    {"n_max", options_.nMax},
	    {"processes_elsewhere", elsewhere},
	    {"theta", options_.theta},
	    {"split_search", splitStatusName(split.status)},
	};
	plan.summary["rho"] = rho;
	if (split.status == policy::SplitStatus::Found) {
		reasons["split_n"] = split.n;
		reasons["split_needed"] = split.splitNeeded;
	}
	const std::optional<policy::RefusalCap> spares =
	    refusals_.added(app.id, request.origin, appState(app), view.overlay.now);
	if (spares) {
		reasons["spares_there"] = spares->most;
		reasons["spares_said"] = view.overlay.now - spares->at;
	}
	if (split.status == policy::SplitStatus::Found && split.splitNeeded)
		return planSplit(request, app, split, base, bytesLocal, std::move(reasons), spares);
	return planTransfer(request, app, base, std::move(reasons), spares);
}

// Too few processes to reach ρ: split into n, then move the r new ones.
AppPlan IosDecision::planSplit(const WorkRequest &request, const ApplicationInfo &app,
			       const policy::SplitPlan &split, const policy::TransferInput &base,
			       double bytesLocal, nlohmann::json reasons,
			       const std::optional<policy::RefusalCap> &spares) const
{
	// The origin's pool holds fewer spare processes than r (the bridge said so): r at most what it holds.
	int64_t remote = split.remote;
	if (spares && spares->most < remote) {
		if (spares->most <= 0) {
			AppPlan none;
			none.summary = {{"app", app.id}, {"n", split.n}, {"r", split.remote}, {"spares_there", 0},
					{"outcome", fmt::format("the bridge has no spare process on {} ({}, {:.1f} s ago)",
								request.origin, spares->refusal,
								reasons.value("spares_said", 0.0))}};
			return none;
		}
		reasons["r_wanted"] = split.remote;
		remote = spares->most;
	}
	policy::TransferInput after = base;
	after.receiver.units = split.n;
	// Each of the n pieces holds N_total/n of the data.
	after.costs.workPerUnit = options_.costs.workPerUnit *
				  static_cast<double>(base.receiver.units) /
				  static_cast<double>(split.n);
	// The origin's own units, counted in the split's pieces (N_j/n each).
	const int64_t piecesThere = std::llround(static_cast<double>(base.requester.units) * static_cast<double>(split.n) /
						 static_cast<double>(base.receiver.units));
	after.requester.units = piecesThere;
	const policy::TransferState state{piecesThere, split.n};
	const policy::TransferCandidate block{0, remote, 0.0,
					      bytesLocal * static_cast<double>(remote) /
						  static_cast<double>(split.n)};
	const double gain = policy::migrationGain(after, state, block);
	const double before = policy::predictedIterationTime(after, state, block, false);
	const double moved = policy::predictedIterationTime(after, state, block, true);

	reasons["n"] = split.n;
	reasons["l"] = split.local;
	reasons["r"] = remote;
	reasons["imbalance"] = split.imbalance;
	reasons["gain"] = gain;
	reasons["iteration_time_before"] = before;
	reasons["iteration_time_after"] = moved;

	AppPlan plan;
	plan.gain = gain;
	plan.summary = {{"app", app.id},	 {"n_total", base.receiver.units},
			{"rho", reasons["rho"]}, {"n", split.n},
			{"l", split.local},	 {"r", remote},
			{"gain", gain}};
	if (!(gain > options_.theta)) {
		plan.summary["outcome"] = "split would not pay: gain <= theta";
		return plan;
	}
	if (options_.migrationOnly) {
		// Whole processes only: r of this node's processes move when it has more than r.
		if (activeCount(app) <= remote) {
			plan.summary["outcome"] = "migration only: too few whole processes here for r";
			plan.gain = 0.0;
			return plan;
		}
		plan.summary["outcome"] = "migration only: r whole processes move";
		plan.actions = {Action{"migrate",
				       app.id,
				       {{"app", app.id}, {"count", remote}, {"target", request.origin}},
				       std::move(reasons)}};
		return plan;
	}
	plan.summary["outcome"] = "split and transfer";
	Action s{"split",
		 app.id,
		 {{"app", app.id},
		  {"n", split.n},
		  {"l", split.local},
		  {"r", remote},
		  {"n_total", base.receiver.units},
		  {"target", request.origin}},
		 reasons};
	Action t{"transfer",
		 app.id,
		 {{"app", app.id},
		  {"processes", remote},
		  {"units", remote},
		  {"after_split", true},
		  {"target", request.origin}},
		 std::move(reasons)};
	plan.actions = {std::move(s), std::move(t)};
	return plan;
}

// Enough processes: eq. 1-5 and the gain of each candidate against θ.
AppPlan IosDecision::planTransfer(const WorkRequest &request, const ApplicationInfo &app,
				  policy::TransferInput input, nlohmann::json reasons,
				  const std::optional<policy::RefusalCap> &spares) const
{
	std::vector<policy::TransferCandidate> candidates;
	for (const ProcessInfo &p : app.local)
		if (p.active)
			candidates.push_back({p.rank, p.units, 0.0, p.bytesLocal});
	input.candidates = candidates;
	policy::TransferPlan tp = policy::planTransfer(input);
	// In pool mode each process that moves takes a spare on the origin: no more than the bridge said it has.
	if (spares && static_cast<int64_t>(tp.chosen.size()) > spares->most) {
		reasons["chosen_wanted"] = tp.chosen.size();
		tp.chosen.resize(static_cast<std::size_t>(std::max<int64_t>(0, spares->most)));
		tp.unitsChosen = 0;
		for (const policy::ChosenProcess &c : tp.chosen)
			tp.unitsChosen += c.units;
	}

	nlohmann::json chosen = nlohmann::json::array();
	nlohmann::json ranks = nlohmann::json::array();
	for (const policy::ChosenProcess &c : tp.chosen) {
		chosen.push_back({{"rank", c.id},
				  {"units", c.units},
				  {"gain", c.gain},
				  {"iteration_time_before", c.iterationTimeBefore},
				  {"iteration_time_after", c.iterationTimeAfter}});
		ranks.push_back(c.id);
	}
	reasons["na_i"] = tp.shares.targetRequester;
	reasons["na_j"] = tp.shares.targetReceiver;
	reasons["n_transfer_exact"] = tp.shares.exactTransfer;
	reasons["n_transfer"] = tp.shares.nTransfer;
	reasons["chosen"] = chosen;
	reasons["stop"] = transferStopName(tp.stop);
	if (tp.stop == policy::TransferStop::BelowThreshold)
		reasons["best_rejected_gain"] = tp.bestRejectedGain;

	AppPlan plan;
	plan.gain = tp.chosen.empty() ? 0.0 : tp.chosen.front().gain;
	plan.summary = {{"app", app.id},
			{"n_total", tp.shares.nTotal},
			{"rho", reasons["rho"]},
			{"n_transfer", tp.shares.nTransfer},
			{"units_chosen", tp.unitsChosen},
			{"stop", transferStopName(tp.stop)}};
	if (tp.stop == policy::TransferStop::BelowThreshold)
		plan.summary["best_rejected_gain"] = tp.bestRejectedGain;
	if (tp.chosen.empty()) {
		plan.summary["outcome"] = reasons.contains("chosen_wanted")
					      ? fmt::format("nothing moves: the bridge has no spare process on {}",
							    request.origin)
					      : std::string("nothing moves");
		return plan;
	}
	plan.summary["outcome"] = "transfer";
	plan.summary["gain"] = plan.gain;
	reasons["gain"] = plan.gain;
	plan.actions.push_back({"transfer",
				app.id,
				{{"app", app.id},
				 {"ranks", ranks},
				 {"processes", tp.chosen.size()},
				 {"units", tp.unitsChosen},
				 {"after_split", false},
				 {"target", request.origin}},
				std::move(reasons)});
	return plan;
}

std::vector<Action> IosDecision::onTick(const DecisionView &view)
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	window_.push(here.apw);
	refusals_.forget(view.overlay.now, [&](const std::string &id) {
		return std::any_of(view.apps.begin(), view.apps.end(), [&](const ApplicationInfo &a) { return a.id == id; });
	});
	if (std::vector<Action> leave = evacuate(view); !leave.empty())
		return leave;

	std::vector<double> peerSigmas;
	for (const PeerEntry &peer : view.overlay.alive)
		peerSigmas.push_back(peer.profile.sigma);
	// The registry counts the processes that reported; the profile may know
	// more (non-registered ones): the larger is the node's load.
	int64_t processes = 0;
	// The hold-down after a split counts from the split's result (app.lastSplit), not from its proposal: a split
	// proposed and never carried out does not hold merges back.
	std::optional<double> lastSplit;
	for (const ApplicationInfo &app : view.apps) {
		processes += activeCount(app);
		if (app.lastSplit >= 0)
			lastSplit = std::max(lastSplit.value_or(app.lastSplit), app.lastSplit);
	}
	processes = std::max<int64_t>(processes, here.processes);

	policy::MergeInput input{peerSigmas,	 processes,	   here.cores,
				 here.ctxswRate, view.overlay.now, lastSplit};
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

	// A merge the bridge said it cannot make (refusal_memory.h): at most the processes it said may leave.
	auto mayLeave = [&](const ApplicationInfo &app) {
		const auto cap = refusals_.removed(app.id, std::string(view.overlay.self), appState(app), view.overlay.now);
		return cap ? cap->most : std::numeric_limits<int64_t>::max();
	};
	const ApplicationInfo *target = nullptr;
	for (const ApplicationInfo &app : view.apps) {
		int64_t count = activeCount(app);
		if (!app.malleable || count < 2 || mergeProposed_.count(app.id) || mayLeave(app) <= 0)
			continue;
		if (!target || count > activeCount(*target))
			target = &app;
	}
	if (!target)
		return {};

	const int64_t count = activeCount(*target);
	const int64_t excess = processes - here.cores;
	const int64_t wanted = std::max<int64_t>(1, count - excess);
	const int64_t into = std::max(wanted, count - mayLeave(*target));
	nlohmann::json ranks = nlohmann::json::array();
	for (const ProcessInfo &p : target->local)
		if (p.active)
			ranks.push_back(p.rank);
	nlohmann::json reasons = {
	    {"why", fmt::format("stable node (σ_i {:.3f}, σ {:.3f}): {} processes on {} cores, {:.0f} context "
				"switches/s: {} of {} fold into {}",
				verdict.sigmaLocal, verdict.sigmaPeers, processes, here.cores, here.ctxswRate,
				target->id, count, into)},
	    {"apw_i", here.apw},
	    {"apw_mean", window_.mean()},
	    {"sigma_i", verdict.sigmaLocal},
	    {"sigma", verdict.sigmaPeers},
	    {"peers", peerSigmas.size()},
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
	mergeProposed_[target->id] = {count, view.overlay.now};
	return {Action{"merge",
		       target->id,
		       {{"app", target->id}, {"ranks", ranks}, {"from", count}, {"into", into}},
		       std::move(reasons)}};
}

} // namespace malleo::ios

MALLEO_MODULE(malleo::ModuleKind::Decision, "ios", "1.0", malleo::ios::IosDecision)
