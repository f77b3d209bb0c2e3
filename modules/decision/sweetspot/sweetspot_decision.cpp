// SPDX-License-Identifier: Apache-2.0
// Decision module "sweetspot": ReSHAPE's sweet-spot probing (seed 003). The
// math is in policy/sweet_spot_policy.h; this file feeds it what the agent
// knows of each application and turns its decision into an action.
//
// Only the agent hosting rank 0 (ApplicationInfo.rootAgent) decides for an
// application, so one resize is proposed per application, not one per node.
// Every tick, for each malleable application rooted here:
//  - the history is ApplicationInfo.sizes, one sample per size measured;
//  - it waits while the application's size differs from its newest sample
//    (a resize is under way, the new size not yet measured);
//  - the horizon is remainingIterations, which the application says through
//    PCM_Remaining_iterations (or Session::remainingIterations) and its
//    coordinator's poll carries, or `unknown_horizon` when it does not say;
//  - the redistribution cost is the one the agent measured, the duration of
//    the last reconfiguration's result (from the command's take at a probe to
//    its result), or `unmeasured_cost` before the first, for growing and
//    shrinking alike;
//  - a grow or shrink is proposed once per size: the module remembers the
//    size it acted on and stays quiet until a sample at another size arrives;
//  - a growth the model wants but whose cost exceeds the seconds it would
//    save over the remaining iterations is declined with a `stay` action
//    (shown, not carried out), once per size, so that the choice and its
//    numbers are in the event log.
// It never answers a WRM: growing happens from the tick, on the root agent.
// A growth names the node to grow onto (`node`): of this node and its alive peers, the one with the most idle cores
// (cores × APW, an MPI process counting as busy), the faster per core on a tie, if it has at least one. ReSHAPE's
// scheduler hands the application idle processors; without a node the bridge takes the first parked process of
// its pool, wherever it is, and a growth onto a busy node measures no gain and stops the probing (issue 27).
// A resize of its own that the agent or the bridge refused is decided again, `retry_after` seconds later, with what
// the bridge said (the refusal memory of ios, refusal_memory.h): a node whose pool has no spare process is not named
// again, a growth takes at most the spares the bridge said a node has, and when the whole pool is empty (a growth
// that named no node refused) it waits. ReSHAPE's scheduler knows its free processors; an agent learns its pool
// from refusals, and without this one refused growth ended the probing for good.
//
// Options (table "sweetspot"):
//   slope_threshold  0.2   grow while the normalized slope -(dT/dp)·p/T is above this
//   step             1     processors added per growth
//   max_processors   0     largest size; 0: the cores of this node and its alive peers
//   min_improvement  0.0   a growth paid only if T fell by more than this fraction
//   unknown_horizon  100   iterations assumed left when the application does not say
//   unmeasured_cost  1.0   seconds a resize is taken to cost before one was measured
//   retry_after      5.0   seconds before a refused resize is decided again
//   refusal_memory   60    seconds what a refusal said of the pool holds at most
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include <malleo/config_table.h>
#include <malleo/decision_module.h>

#include "refusal_view.h"
#include "sweet_spot_policy.h"

namespace malleo {

namespace {

class SweetSpotDecision : public DecisionModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		policy::SweetSpotParams p = params_;
		int64_t horizon = unknownHorizon_;
		double unmeasured = unmeasuredCost_, retry = retryAfter_, memory = refusals_.expiry();
		ConfigTable t(table, "sweetspot");
		t.number("slope_threshold", p.slopeThreshold, 0, 100);
		t.integer("step", p.step, 1, 1u << 20);
		t.integer("max_processors", p.maxProcessors, 0, 1u << 24);
		t.number("min_improvement", p.minImprovement, 0, 1);
		t.integer("unknown_horizon", horizon, 0, 1ull << 40);
		t.number("unmeasured_cost", unmeasured, 0, 86400);
		t.number("retry_after", retry, 0, 86400);
		t.number("refusal_memory", memory, 0, 86400);
		t.finish();
		if (!t.error().empty())
			return t.error();
		params_ = p;
		unknownHorizon_ = horizon;
		unmeasuredCost_ = unmeasured;
		retryAfter_ = retry;
		refusals_.setExpiry(memory);
		return {};
	}

	WorkVerdict onWorkRequest(const DecisionView &, const WorkRequest &request) override
	{
		return {
		    false,
		    {{"module", "sweetspot"},
		     {"origin", request.origin},
		     {"why", "sweetspot resizes applications from its tick on their root agent; "
			     "it never answers work requests"}},
		    {}};
	}

	std::vector<Action> onTick(const DecisionView &view) override;
	void onCommandResult(const DecisionView &view, const CommandResult &result) override;

private:
	int64_t maxProcessors(const DecisionView &view) const;
	std::pair<std::string, double> idlestNode(const DecisionView &view, const ApplicationInfo &app) const;
	int64_t sparesSaid(const DecisionView &view, const ApplicationInfo &app, const std::string &node) const;

	// What the policy is given of one application.
	struct Inputs {
		std::vector<policy::SizeSample> history;
		int64_t remaining = 0;
		bool measured = false;
		double cost = 0.0;
	};
	void forgetGoneApps(const DecisionView &view);
	bool waiting(const DecisionView &view, const ApplicationInfo &app) const;
	Inputs inputsOf(const ApplicationInfo &app) const;
	static nlohmann::json reasonsOf(const ApplicationInfo &app, const Inputs &in, const policy::SizeDecision &d,
					const policy::SweetSpotParams &params);
	Action declinedAction(const ApplicationInfo &app, const Inputs &in, const policy::SizeDecision &d,
			      nlohmann::json reasons);
	std::optional<std::string> boundByPool(const DecisionView &view, const ApplicationInfo &app,
					       policy::SizeDecision &d, nlohmann::json &reasons);
	std::optional<Action> decideApp(const DecisionView &view, const ApplicationInfo &app,
					const policy::SweetSpotParams &params);

	policy::SweetSpotParams params_;
	int64_t unknownHorizon_ = 100;
	double unmeasuredCost_ = 1.0;
	double retryAfter_ = 5.0;
	policy::RefusalMemory refusals_{60.0};
	std::map<std::string, double> retryAt_;    // app -> when a refused resize may be decided again
	std::map<std::string, int64_t> actedAt_;    // app -> the size it was last resized from
	std::map<std::string, int64_t> declinedAt_; // app -> the size a growth was last declined at
};

// 0 means "as many as this agent can see": its cores and its alive peers'.
int64_t SweetSpotDecision::maxProcessors(const DecisionView &view) const
{
	if (params_.maxProcessors > 0)
		return params_.maxProcessors;
	int64_t cores = view.overlay.local ? view.overlay.local->cores : 1;
	for (const PeerEntry &peer : view.overlay.alive)
		cores += peer.profile.cores;
	return cores;
}

void SweetSpotDecision::onCommandResult(const DecisionView &view, const CommandResult &result)
{
	policy::learnResult(refusals_, view, result);
	if (result.ok || result.decision != "sweetspot" || (result.kind != "grow" && result.kind != "shrink"))
		return;
	actedAt_.erase(result.app);
	retryAt_[result.app] = view.overlay.now + retryAfter_;
}

// The spare processes the bridge said `node` has for the application ("": its whole pool), while that holds; -1:
// nothing said.
int64_t SweetSpotDecision::sparesSaid(const DecisionView &view, const ApplicationInfo &app,
				      const std::string &node) const
{
	const auto cap = refusals_.added(app.id, node, policy::appState(app), view.overlay.now);
	return cap ? cap->most : -1;
}

// The node with the most idle cores, the faster per core on a tie, then the smaller id: deterministic. A node the
// bridge said has no spare process for the application is passed over.
std::pair<std::string, double> SweetSpotDecision::idlestNode(const DecisionView &view, const ApplicationInfo &app) const
{
	std::string best;
	double bestIdle = 0.0, bestSpeed = 0.0;
	const auto consider = [&](std::string_view id, const NodeProfile &p) {
		if (sparesSaid(view, app, std::string(id)) == 0)
			return;
		const double idle = static_cast<double>(p.cores) * std::clamp(p.apw, 0.0, 1.0);
		const double speed = p.pw / std::max(1, p.cores);
		if (best.empty() || idle > bestIdle + 1e-9 ||
		    (std::abs(idle - bestIdle) <= 1e-9 && (speed > bestSpeed + 1e-9 ||
							   (std::abs(speed - bestSpeed) <= 1e-9 && id < best)))) {
			best = std::string(id);
			bestIdle = idle;
			bestSpeed = speed;
		}
	};
	if (view.overlay.local)
		consider(view.overlay.self, *view.overlay.local);
	for (const PeerEntry &peer : view.overlay.alive)
		consider(peer.id, peer.profile);
	return {best, bestIdle};
}

// The applications that left are forgotten with what was remembered of them.
void SweetSpotDecision::forgetGoneApps(const DecisionView &view)
{
	const auto gone = [&](const auto &entry) {
		return std::none_of(view.apps.begin(), view.apps.end(),
				    [&](const ApplicationInfo &a) { return a.id == entry.first; });
	};
	std::erase_if(actedAt_, gone);
	std::erase_if(declinedAt_, gone);
	std::erase_if(retryAt_, gone);
	policy::forgetGone(refusals_, view);
}

// Whether the application is not to be decided for this tick: a resize under way, its size already acted on, or a
// refused resize not yet due again.
bool SweetSpotDecision::waiting(const DecisionView &view, const ApplicationInfo &app) const
{
	const int64_t current = app.sizes.back().processes;
	if (app.totalProcesses > 0 && app.totalProcesses != current)
		return true; // resized, the new size not measured yet
	if (auto it = actedAt_.find(app.id); it != actedAt_.end() && it->second == current)
		return true; // already acted on this size
	if (auto it = retryAt_.find(app.id); it != retryAt_.end() && view.overlay.now < it->second)
		return true; // refused: decided again later
	return false;
}

// What the policy is given of the application: its sizes, the iterations left and the cost of a resize.
SweetSpotDecision::Inputs SweetSpotDecision::inputsOf(const ApplicationInfo &app) const
{
	Inputs in;
	for (const IterationSample &s : app.sizes)
		in.history.push_back({s.processes, s.seconds});
	in.remaining = app.remainingIterations >= 0 ? app.remainingIterations : unknownHorizon_;
	in.measured = app.redistributionCost > 0;
	in.cost = in.measured ? app.redistributionCost : unmeasuredCost_;
	return in;
}

// The numbers of a decision, shown with its action.
nlohmann::json SweetSpotDecision::reasonsOf(const ApplicationInfo &app, const Inputs &in,
					    const policy::SizeDecision &d, const policy::SweetSpotParams &params)
{
	nlohmann::json sizes = nlohmann::json::array();
	for (const policy::SizeSample &s : in.history)
		sizes.push_back({{"processes", s.processors}, {"seconds", s.iterationTime}});
	return {
	    {"reason", policy::sizeReasonName(d.reason)},
	    {"current", d.current},
	    {"target", d.target},
	    {"points", d.model.points},
	    {"slope", d.model.slope},
	    {"normalized_slope", d.model.normalizedSlope},
	    {"slope_threshold", params.slopeThreshold},
	    {"gain_per_iteration", d.gainPerIteration},
	    {"remaining_iterations", in.remaining},
	    {"remaining_known", app.remainingIterations >= 0},
	    {"horizon_gain", d.horizonGain},
	    {"cost", d.cost},
	    {"cost_measured", in.measured},
	    {"min_improvement", params.minImprovement},
	    {"max_processors", params.maxProcessors},
	    {"sizes", std::move(sizes)},
	};
}

// A resize the model wanted and its cost stopped: a `stay` action that says so, shown, not carried out.
Action SweetSpotDecision::declinedAction(const ApplicationInfo &app, const Inputs &in,
					 const policy::SizeDecision &d, nlohmann::json reasons)
{
	const int64_t current = app.sizes.back().processes;
	declinedAt_[app.id] = current;
	reasons["declined"] = d.declined == policy::SizeAction::Grow ? "grow" : "shrink";
	reasons["declined_size"] = d.declinedTarget;
	reasons["why"] = fmt::format(
	    "{} to {} processes would save {:.2f} s over the {} iterations left, "
	    "not more than the {:.2f} s a "
	    "resize costs ({})",
	    d.declined == policy::SizeAction::Grow ? "growing" : "shrinking back", d.declinedTarget, d.horizonGain,
	    in.remaining, d.cost, in.measured ? "measured" : "not measured yet");
	return {"stay", app.id, {{"app", app.id}, {"size", current}}, std::move(reasons)};
}

// The node a growth goes to ("": none named) with its target capped by what the bridge said of the pool, or a
// shrink's target capped by the processes it said may leave; nothing when the bridge said none can be added or
// removed (the resize waits `retry_after`).
std::optional<std::string> SweetSpotDecision::boundByPool(const DecisionView &view, const ApplicationInfo &app,
							  policy::SizeDecision &d, nlohmann::json &reasons)
{
	std::string node;
	if (d.action == policy::SizeAction::Grow) {
		// A whole idle core at least (0.9: a profile's APW is never exactly 1 on a real node).
		const auto [idlest, idle] = idlestNode(view, app);
		reasons["idlest_node"] = idlest;
		reasons["idle_cores"] = idle;
		if (!idlest.empty() && idle >= 0.9)
			node = idlest;
		// What the bridge said of the pool there (its whole pool when no node is named) caps the growth.
		if (const int64_t spares = sparesSaid(view, app, node); spares == 0) {
			retryAt_[app.id] = view.overlay.now + retryAfter_;
			return std::nullopt; // no spare process to grow onto, the bridge said: wait for the pool to change
		} else if (spares > 0 && d.target > d.current + spares) {
			d.target = d.current + spares;
			reasons["target"] = d.target;
			reasons["spares"] = spares;
		}
	} else if (const auto cap = refusals_.removed(app.id, {}, policy::appState(app), view.overlay.now)) {
		// A shrink the bridge refused: at most the processes it said may leave.
		if (cap->most == 0) {
			retryAt_[app.id] = view.overlay.now + retryAfter_;
			return std::nullopt;
		}
		d.target = std::max(d.target, d.current - cap->most);
		reasons["target"] = d.target;
	}
	return node;
}

// The application's grow, shrink or declined growth this tick, if any.
std::optional<Action> SweetSpotDecision::decideApp(const DecisionView &view, const ApplicationInfo &app,
						   const policy::SweetSpotParams &params)
{
	const int64_t current = app.sizes.back().processes;
	const Inputs in = inputsOf(app);
	policy::SizeDecision d = policy::decideSize({in.history, in.remaining, in.cost, in.cost}, params);
	// A growth declined for its cost is said once per size; other stays are the model's own quiet.
	const bool declined = d.declined != policy::SizeAction::Stay;
	if (d.action == policy::SizeAction::Stay) {
		auto it = declinedAt_.find(app.id);
		if (!declined || (it != declinedAt_.end() && it->second == current))
			return std::nullopt;
	}
	nlohmann::json reasons = reasonsOf(app, in, d, params);
	if (declined)
		return declinedAction(app, in, d, std::move(reasons));
	const std::optional<std::string> node = boundByPool(view, app, d, reasons);
	if (!node)
		return std::nullopt;
	reasons["why"] = fmt::format(
	    "{} {} -> {} processes ({}): {} {:.2f} s over the {} iterations left, against "
	    "the {:.2f} s a resize "
	    "costs ({})",
	    d.action == policy::SizeAction::Grow ? "growing" : "shrinking back", d.current, d.target,
	    policy::sizeReasonName(d.reason), d.action == policy::SizeAction::Grow ? "saves up to" : "staying loses",
	    d.horizonGain, in.remaining, d.cost, in.measured ? "measured" : "not measured yet");
	actedAt_[app.id] = current;
	nlohmann::json actionParams = {{"app", app.id}, {"from", d.current}, {"size", d.target}};
	if (!node->empty())
		actionParams["node"] = *node;
	return Action{d.action == policy::SizeAction::Grow ? "grow" : "shrink", app.id, std::move(actionParams),
		      std::move(reasons)};
}

std::vector<Action> SweetSpotDecision::onTick(const DecisionView &view)
{
	forgetGoneApps(view);
	policy::SweetSpotParams params = params_;
	params.maxProcessors = maxProcessors(view);
	std::vector<Action> actions;
	for (const ApplicationInfo &app : view.apps) {
		if (!app.malleable || app.rootAgent != view.overlay.self || app.sizes.empty() || waiting(view, app))
			continue;
		if (std::optional<Action> action = decideApp(view, app, params))
			actions.push_back(std::move(*action));
	}
	return actions;
}

} // namespace

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Decision, "sweetspot", "1.0", malleo::SweetSpotDecision)
