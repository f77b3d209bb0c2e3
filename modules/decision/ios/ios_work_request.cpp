// SPDX-License-Identifier: Apache-2.0
// The "ios" module's answer to a work request: seed 001's transfer and split policies (section 5); the options and the
// merge on a tick are in ios_decision.cpp.
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
//    441.1 s against 292.2 s; docs/notes/sim-policies.md has the table).
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
#include "ios_decision.h"

#include "app_demand.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

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

// The application's active processes here: their data units, their bytes with other local processes, and the
// latest time one of them became active.
struct ActiveTotals {
	int64_t units = 0;
	double bytesLocal = 0.0;
	double newest = -std::numeric_limits<double>::infinity();
};

ActiveTotals activeTotals(const ApplicationInfo &app)
{
	ActiveTotals t;
	for (const ProcessInfo &p : app.local) {
		if (!p.active)
			continue;
		t.units += p.units;
		t.bytesLocal += p.bytesLocal;
		t.newest = std::max(t.newest, p.lastChange);
	}
	return t;
}

// A split into n (l stay) and the transfer of its r new processes to the origin.
std::vector<Action> splitActions(const std::string &app, const std::string &origin, const policy::SplitPlan &split,
				 int64_t remote, int64_t nTotal, nlohmann::json reasons)
{
	Action s{"split",
		 app,
		 {{"app", app},
		  {"n", split.n},
		  {"l", split.local},
		  {"r", remote},
		  {"n_total", nTotal},
		  {"target", origin}},
		 reasons};
	Action t{"transfer",
		 app,
		 {{"app", app}, {"processes", remote}, {"units", remote}, {"after_split", true}, {"target", origin}},
		 std::move(reasons)};
	return {std::move(s), std::move(t)};
}

// What the origin said it hosts of the application (an agent from before `hosted` says nothing): Nb_i, and the
// cores its processes there use.
HostedShare hostedThere(const WorkRequest &request, const std::string &app, bool originUnits)
{
	const auto hosted = request.hosted.find(app);
	return hosted == request.hosted.end() || !originUnits ? HostedShare{} : hosted->second;
}

// ρ comes from UPW, the node's CPU use over the last profile interval: a process that started or arrived within it
// (`since` seconds ago) is not (fully) in that figure, and a plan made now would misjudge what the node gives away.
// Why no plan is made yet, or nothing once every process here has run `settle` seconds.
std::optional<std::string> notSettled(double since, double settle)
{
	if (!(since < settle))
		return std::nullopt;
	return fmt::format("a process started here {:.1f} s ago: the node's load does not show it yet (settle {:g} s)",
			   since, settle);
}

// The share of this node's units the origin is to get: ρ when it hosts none of the application, else the part of
// this node's units that eq. 1-5 over both nodes' units say it lacks; nothing when it already holds its share
// (within the tolerance), the outcome then in `summary`.
std::optional<double> shareToGive(double rho, const policy::TransferShares &shares, int64_t unitsThere,
				  int64_t unitsHere, double loadThere, double tolerance, nlohmann::json &summary)
{
	if (unitsThere == 0)
		return rho;
	summary["na_i"] = shares.targetRequester;
	summary["load_i"] = loadThere;
	if (!(shares.exactTransfer > tolerance * static_cast<double>(shares.nTotal))) {
		summary["outcome"] = fmt::format("the origin already hosts its share ({} of {} units, its "
						 "share {:.2f})",
						 unitsThere, shares.nTotal, shares.targetRequester);
		return std::nullopt;
	}
	return shares.exactTransfer / static_cast<double>(unitsHere);
}

// The numbers a plan for one application was made from.
struct PlanNumbers {
	const NodeProfile &origin;
	const NodeProfile &here;
	HostedShare there;
	AppDemand demand;
	double trust;
	int64_t remoteMax;
	int64_t unitsThere;
	int64_t unitsHere;
	int64_t elsewhere;
	policy::TransferShares shares;
	double rho;
	double rhoGive;
	policy::SplitPlan split;
};

// The plan's numbers as its actions show them.
nlohmann::json planReasons(const PlanNumbers &n, const IosOptions &options)
{
	nlohmann::json reasons = {
	    {"apw_i", n.origin.apw},
	    {"pw_i", n.origin.pw},
	    {"load_i", n.there.load},
	    {"upw_j", n.here.upw},
	    {"pw_j", n.here.pw},
	    {"app_fraction_j", n.demand.fraction},
	    {"app_cores_used", n.demand.usedCores},
	    {"app_cores_reach", n.demand.reachCores},
	    {"compute_share", n.demand.computeShare},
	    {"split_trust", n.trust},
	    {"r_max", n.remoteMax},
	    {"n_i", n.unitsThere},
	    {"n_j", n.unitsHere},
	    {"n_total", n.shares.nTotal},
	    {"na_i", n.shares.targetRequester},
	    {"rho", n.rho},
	    {"rho_give", n.rhoGive},
	    {"tolerance", options.tolerance},
	    {"n_max", options.nMax},
	    {"processes_elsewhere", n.elsewhere},
	    {"theta", options.theta},
	    {"split_search", splitStatusName(n.split.status)},
	};
	if (n.split.status == policy::SplitStatus::Found) {
		reasons["split_n"] = n.split.n;
		reasons["split_needed"] = n.split.splitNeeded;
		reasons["r_capped"] = n.split.remoteCapped;
	}
	return reasons;
}

// A transfer plan's numbers into `reasons`: the shares of eq. 1-5 and each process chosen. Returns the chosen ranks.
nlohmann::json addTransferReasons(const policy::TransferPlan &tp, nlohmann::json &reasons)
{
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
	return ranks;
}

} // namespace

// Why a split whose gain is below theta is not made: where only part of the model's gain can come true, how much.
std::string IosDecision::splitBelowTheta(double modelGain, double realizable) const
{
	if (!(realizable < 1.0 && modelGain > options_.theta))
		return "split would not pay: gain <= theta";
	return fmt::format("split would not pay: it gains {:.0f} % of the {:.0f} % of an iteration spent computing here "
			   "(trust {:.2f}), theta {:.0f} %",
			   100 * modelGain, 100 * realizable / predictions_.trust(), predictions_.trust(),
			   100 * options_.theta);
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
	if (best->actions.front().kind == "split") {
		const ApplicationInfo &app = *std::find_if(view.apps.begin(), view.apps.end(), [&](const ApplicationInfo &a) {
			return a.id == best->actions.front().app;
		});
		const int64_t activeHere = activeCount(app);
		const int64_t after = std::max(app.totalProcesses, activeHere) - activeHere +
				      best->actions.front().params.value("n", activeHere);
		predictions_.predicted(app, after, best->gain, view.overlay.now);
	}
	v.actions = std::move(best->actions);
	return v;
}

AppPlan IosDecision::planFor(const DecisionView &view, const WorkRequest &request,
			     const ApplicationInfo &app) const
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	const NodeProfile &origin = request.originProfile;
	const auto [unitsHere, bytesLocal, newest] = activeTotals(app);
	const HostedShare there = hostedThere(request, app.id, options_.originUnits);
	const int64_t unitsThere = std::max<int64_t>(0, there.units);
	AppPlan plan;
	plan.summary = {{"app", app.id}, {"n_i", unitsThere}, {"n_j", unitsHere}};
	if (unitsHere == 0) {
		plan.summary["outcome"] = "no active process here";
		return plan;
	}
	if (std::optional<std::string> unsettled = notSettled(view.overlay.now - newest, options_.settle)) {
		plan.summary["outcome"] = *unsettled;
		return plan;
	}

	// The share of the origin's power the application can have: what is free there (APW_i, the paper's) and, when
	// it already runs there, what its processes use. Counting only the free part would rate an origin whose
	// processes keep one of its cores busy as a core weaker than it is for them.
	const double originCores = std::max(origin.cores, 1);
	const double originShare = std::min(1.0, origin.apw + std::max(0.0, there.load) / originCores);
	// What the application has here: UPW_j, or the cores its processes could use where they wait (app_demand.h); and
	// the share of a predicted gain that can come true: the part of an iteration spent computing, times the trust
	// the splits' past predictions earned (prediction_check.h).
	const AppDemand demand = appDemand(app, here);
	const double realizable = demand.computeShare * predictions_.trust();
	GainWorth worth{realizable, paybackOf(app)};
	policy::TransferInput base;
	base.requester = {unitsThere, origin.pw, originShare};
	base.receiver = {unitsHere, here.pw, demand.fraction};
	base.costs = options_.costs;
	base.theta = realizable > 0.0 ? options_.theta / realizable : 1.0;

	const double rho = policy::powerRatio(originShare, origin.pw, demand.fraction, here.pw);
	// Eq. 1-5 over both nodes' units: this node gives Nb_j − Na_j, the share ρ of N_total the origin lacks. With
	// Nb_i = 0 that is ρ·Nb_j, as before; an origin that already holds its share (within the tolerance) gets nothing:
	// it only looks idle, its processes waiting for this node's (a transfer back and forth, issue 27).
	const policy::TransferShares shares = policy::transferShares(base.requester, base.receiver);
	const std::optional<double> rhoGive =
	    shareToGive(rho, shares, unitsThere, unitsHere, there.load, options_.tolerance, plan.summary);
	if (!rhoGive)
		return plan;
	// n_max bounds the whole application: the pieces made here add to its processes on other nodes.
	const int64_t activeHere = activeCount(app);
	const int64_t elsewhere = std::max<int64_t>(app.totalProcesses, activeHere) - activeHere;
	const int64_t nMaxHere = options_.nMax - elsewhere;
	const int64_t remoteMax = remoteCapacity(origin, here);
	policy::SplitPlan split = policy::planSplit({unitsHere, *rhoGive, options_.tolerance, nMaxHere, remoteMax});
	nlohmann::json reasons = planReasons({origin, here, there, demand, predictions_.trust(), remoteMax, unitsThere,
					      unitsHere, elsewhere, shares, rho, *rhoGive, split},
					     options_);
	plan.summary["rho"] = rho;
	const std::optional<policy::RefusalCap> spares =
	    refusals_.added(app.id, request.origin, appState(app), view.overlay.now);
	if (spares) {
		reasons["spares_there"] = spares->most;
		reasons["spares_said"] = view.overlay.now - spares->at;
	}
	if (split.status == policy::SplitStatus::Found && split.splitNeeded)
		return planSplit(request, app, split, base, bytesLocal, worth, std::move(reasons), spares);
	return planTransfer(request, app, base, worth, std::move(reasons), spares);
}

// Too few processes to reach ρ: split into n, then move the r new ones.
AppPlan IosDecision::planSplit(const WorkRequest &request, const ApplicationInfo &app,
			       const policy::SplitPlan &split, const policy::TransferInput &base,
			       double bytesLocal, const GainWorth &worth, nlohmann::json reasons,
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
	const double modelGain = policy::migrationGain(after, state, block);
	const double realizable = worth.realizable;
	const double gain = modelGain * realizable;
	const double before = policy::predictedIterationTime(after, state, block, false);
	const double moved = policy::predictedIterationTime(after, state, block, true);

	reasons["model_gain"] = modelGain;
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
		plan.summary["outcome"] = splitBelowTheta(modelGain, realizable);
		return plan;
	}
	if (std::optional<std::string> unpaid = wouldNotPayBack(worth, gain, reasons)) {
		plan.summary["outcome"] = "split " + *unpaid;
		plan.gain = 0.0;
		return plan;
	}
	if (options_.migrationOnly) {
		migrateInstead(request, app, remote, std::move(reasons), plan);
		return plan;
	}
	plan.summary["outcome"] = "split and transfer";
	plan.actions = splitActions(app.id, request.origin, split, remote, base.receiver.units, std::move(reasons));
	return plan;
}

// Whole processes only (migration_only), instead of a split: r of this node's processes move when it has more than r.
void IosDecision::migrateInstead(const WorkRequest &request, const ApplicationInfo &app, int64_t remote,
				 nlohmann::json reasons, AppPlan &plan) const
{
	if (activeCount(app) <= remote) {
		plan.summary["outcome"] = "migration only: too few whole processes here for r";
		plan.gain = 0.0;
		return;
	}
	plan.summary["outcome"] = "migration only: r whole processes move";
	plan.actions = {Action{"migrate",
			       app.id,
			       {{"app", app.id}, {"count", remote}, {"target", request.origin}},
			       std::move(reasons)}};
}

// Enough processes: eq. 1-5 and the gain of each candidate against θ.
AppPlan IosDecision::planTransfer(const WorkRequest &request, const ApplicationInfo &app,
				  policy::TransferInput input, const GainWorth &worth, nlohmann::json reasons,
				  const std::optional<policy::RefusalCap> &spares) const
{
	std::vector<policy::TransferCandidate> candidates;
	for (const ProcessInfo &p : app.local)
		if (p.active)
			candidates.push_back({p.rank, p.units, 0.0, p.bytesLocal});
	input.candidates = candidates;
	policy::TransferPlan tp = policy::planTransfer(input);
	// The policy weighed the model's gains against theta / realizable; what is told is the share that can come true.
	for (policy::ChosenProcess &c : tp.chosen)
		c.gain *= worth.realizable;
	tp.bestRejectedGain *= worth.realizable;
	// In pool mode each process that moves takes a spare on the origin: no more than the bridge said it has.
	if (spares && static_cast<int64_t>(tp.chosen.size()) > spares->most) {
		reasons["chosen_wanted"] = tp.chosen.size();
		tp.chosen.resize(static_cast<std::size_t>(std::max<int64_t>(0, spares->most)));
		tp.unitsChosen = 0;
		for (const policy::ChosenProcess &c : tp.chosen)
			tp.unitsChosen += c.units;
	}

	const nlohmann::json ranks = addTransferReasons(tp, reasons);

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
	if (std::optional<std::string> unpaid = wouldNotPayBack(worth, plan.gain, reasons)) {
		plan.summary["outcome"] = "transfer " + *unpaid;
		plan.gain = 0.0;
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

// What a reconfiguration of `app` must pay back: the iterations it has to do it in (what the application says is
// left, else how long configurations last here, in its iterations) and the stall its last resize cost.
policy::PaybackInput IosDecision::paybackOf(const ApplicationInfo &app) const
{
	policy::PaybackInput in;
	if (!app.sizes.empty() && app.sizes.back().processes == app.totalProcesses)
		in.iterationSeconds = app.sizes.back().seconds;
	if (app.remainingIterations >= 0)
		in.horizonIterations = static_cast<double>(app.remainingIterations);
	else if (configurationLifetime_ > 0.0 && in.iterationSeconds > 0.0)
		in.horizonIterations = configurationLifetime_ / in.iterationSeconds;
	in.costSeconds = app.redistributionCost;
	return in;
}

// The reasons' payback figures, and the outcome when the gain cannot pay for the stall: nothing for want of a measure.
std::optional<std::string> IosDecision::wouldNotPayBack(const GainWorth &worth, double gain,
							 nlohmann::json &reasons) const
{
	policy::PaybackInput in = worth.payback;
	in.gain = gain;
	const policy::Payback p = policy::payback(in);
	if (!p.known)
		return std::nullopt;
	reasons["saved_seconds"] = p.savedSeconds;
	reasons["cost_seconds"] = in.costSeconds;
	reasons["horizon_iterations"] = in.horizonIterations;
	if (p.pays)
		return std::nullopt;
	return fmt::format("would not pay for itself: it saves {:.2f} s over the {:.0f} iterations it has, its stall "
			   "costs {:.2f} s",
			   p.savedSeconds, in.horizonIterations, in.costSeconds);
}

} // namespace malleo::ios
