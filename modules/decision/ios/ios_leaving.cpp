// SPDX-License-Identifier: Apache-2.0
// The "ios" module's rules for processes leaving a node, both departures from seed 001 (ios_decision.cpp's header
// says why): a node loaded by something else pushes its processes to the peer where they get the most CPU
// (evacuate), and a draining node folds its processes into the application's others or migrates them (onDrain).
#include "ios_decision.h"

#include <algorithm>

#include <fmt/format.h>

namespace malleo::ios {

namespace {

// The alive peers by free power (APW·PW), most first.
std::vector<const PeerEntry *> byFreePower(const DecisionView &view)
{
	std::vector<const PeerEntry *> peers;
	for (const PeerEntry &p : view.overlay.alive)
		peers.push_back(&p);
	std::stable_sort(peers.begin(), peers.end(), [](const PeerEntry *a, const PeerEntry *b) {
		return a->profile.apw * a->profile.pw > b->profile.apw * b->profile.pw;
	});
	return peers;
}

} // namespace

// The peer where each of the application's `count` processes here would get the most CPU, in cores of this node's
// speed (`speedHere`, its power per core): its free cores, or a fair share beside the processes it runs, scaled by
// its power per core. A peer whose pool the bridge said has no spare process for the application takes none.
std::pair<const PeerEntry *, double> IosDecision::bestPeerFor(const DecisionView &view, const ApplicationInfo &app,
							      int64_t count, double speedHere) const
{
	const PeerEntry *best = nullptr;
	double bestShare = 0.0;
	for (const PeerEntry &peer : view.overlay.alive) {
		if (const auto spares = refusals_.added(app.id, peer.id, appState(app), view.overlay.now);
		    spares && spares->most <= 0)
			continue;
		const double peerCores = std::max(peer.profile.cores, 1);
		const double free = peer.profile.apw * peerCores / static_cast<double>(count);
		const double fair = peerCores / static_cast<double>(peer.profile.processes + count);
		const double share = std::min(1.0, std::max(free, fair)) * (peer.profile.pw / peerCores) /
				     std::max(speedHere, 1e-9);
		if (!best || share > bestShare) {
			best = &peer;
			bestShare = share;
		}
	}
	return {best, bestShare};
}

std::vector<Action> IosDecision::evacuate(const DecisionView &view)
{
	const NodeProfile here = view.overlay.local ? *view.overlay.local : NodeProfile{};
	const double cores = std::max<int64_t>(here.cores, 1);
	double own = 0.0;
	for (const ApplicationInfo &app : view.apps)
		for (const ProcessInfo &p : app.local)
			own += p.active ? p.ownLoad : 0.0;
	// What the node's processes of no application use, in cores: a CPU hog, another user's job. Processes that
	// have not reported their CPU share yet (own 0) tell nothing: a starved one still gets some.
	const double foreign = std::max(0.0, here.upw * cores - own) / cores;
	if (options_.evacuateLoad <= 0 || !(own > 0) || foreign < options_.evacuateLoad) {
		loadedTicks_ = 0;
		return {};
	}
	if (++loadedTicks_ < options_.evacuateTicks)
		return {};
	std::vector<Action> actions;
	for (const ApplicationInfo &app : view.apps) {
		const int64_t count = activeCount(app);
		if (!app.malleable || count == 0)
			continue;
		// CPU per process, in cores: what they get here, and what they would get on a peer (its free cores, or a
		// fair share beside the application processes it runs), scaled by its power per core against this one's.
		double ownHere = 0.0;
		for (const ProcessInfo &p : app.local)
			ownHere += p.active ? p.ownLoad : 0.0;
		const double here_ = ownHere / static_cast<double>(count);
		const auto [best, bestShare] = bestPeerFor(view, app, count, here.pw / cores);
		if (!best || !(bestShare > here_ * (1 + options_.theta)))
			continue;
		// Its iteration time, set by this process, falls as its CPU rises; a move that cannot pay back its stall
		// before the application ends (or its configuration usually changes) is not made.
		nlohmann::json payback = nlohmann::json::object();
		if (wouldNotPayBack({1.0, paybackOf(app)}, 1.0 - here_ / bestShare, payback))
			continue;
		// One process a time: the target may have room for fewer than all (a pool's spares), and each move is
		// followed by the hold-down, in which the next measurement shows what the last one gained.
		nlohmann::json reasons = {
		    {"why", fmt::format("{:.0f} % of this node is used by processes of no application here: 1 of its {} "
					"processes moves to {}, where it would get {:.2f} cores against {:.2f} here",
					100 * foreign, count, best->id, bestShare, here_)},
		    {"foreign_load", foreign}, {"upw_j", here.upw}, {"own_load", own}, {"cores", here.cores},
		    {"evacuate_load", options_.evacuateLoad}, {"ticks", loadedTicks_},
		    {"share_here", here_}, {"share_there", bestShare}, {"theta", options_.theta}};
		reasons.update(payback);
		actions.push_back({"migrate", app.id, {{"app", app.id}, {"count", 1}, {"target", best->id}},
				   std::move(reasons)});
	}
	loadedTicks_ = 0;
	return actions;
}

std::vector<Action> IosDecision::onDrain(const DecisionView &view)
{
	const std::vector<const PeerEntry *> peers = byFreePower(view);
	std::vector<Action> actions;
	for (const ApplicationInfo &app : view.apps) {
		const int64_t count = activeCount(app);
		if (!app.malleable || count == 0)
			continue;
		// With processes elsewhere, this node's fold into them: one merge, which needs no spare process
		// anywhere and gives their data to the others evenly (the bridge rebalances on a merge).
		// A merge the bridge said it cannot make (the PCM C API lets only the last slots leave): the processes it
		// said may leave fold, the others migrate.
		const auto cap = refusals_.removed(app.id, std::string(view.overlay.self), appState(app), view.overlay.now);
		const int64_t folding = cap ? std::min(count, cap->most) : count;
		if (!options_.migrationOnly && app.totalProcesses > count && folding > 0) {
			// Not the application's size: off its root agent that is the launch's world, parked spares included.
			nlohmann::json reasons = {{"why", fmt::format("this node drains: {} of its {} processes fold into "
								      "the application's processes elsewhere",
								      folding, count)}};
			if (cap)
				reasons["may_leave"] = cap->most;
			actions.push_back({"merge", app.id, {{"app", app.id}, {"count", folding}}, std::move(reasons)});
			continue;
		}
		// A refused migration leaves the processes here: the next call tries the next peer, then any node.
		std::vector<std::string> &tried = drainTried_[app.id];
		std::string target;
		for (const PeerEntry *p : peers)
			if (std::find(tried.begin(), tried.end(), p->id) == tried.end()) {
				target = p->id;
				break;
			}
		nlohmann::json params = {{"app", app.id}, {"count", count}};
		std::string why = fmt::format("this node drains: its {} processes move to ", count);
		if (target.empty()) {
			tried.clear();
			why += "any node with room";
		} else {
			tried.push_back(target);
			params["target"] = target;
			why += target;
		}
		actions.push_back({"migrate", app.id, std::move(params), {{"why", why}, {"tried", tried}}});
	}
	return actions;
}

} // namespace malleo::ios
