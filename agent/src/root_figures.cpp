// SPDX-License-Identifier: Apache-2.0
// The active size on every agent: only the agent hosting an application's rank 0 hears its coordinator's poll, which
// says how many processes are active; elsewhere the registry's size is the launch's world, parked spares included,
// and a split planned there would count the spares as processes elsewhere. The root says its figures in its
// heartbeats (`root_apps`: size, the iteration time at that size, the iterations left, the last resize's cost), and
// an agent hosting other processes of the application shows them to its decision module in place of its own, as long
// as that peer is the application's root (reconfigurations.cpp, rootAgentOf).
#include "core.h"

#include <algorithm>
#include <cmath>

namespace malleo {

nlohmann::json Core::rootAppsHere() const
{
	nlohmann::json figures = nlohmann::json::object();
	for (const auto &[id, app] : apps_) {
		if (!app.malleable || !hostsRank0(app) || app.totalProcesses <= 0 || figures.size() >= kRootsMax)
			continue;
		nlohmann::json f = {{"size", std::min(app.totalProcesses, static_cast<int64_t>(kRankMax))}};
		// A sample of an earlier size is not this size's: said once the new size has one.
		if (!app.sizes.empty() && app.sizes.back().processes == app.totalProcesses &&
		    std::isfinite(app.sizes.back().seconds) && app.sizes.back().seconds >= 0)
			f["iteration_seconds"] = app.sizes.back().seconds;
		if (app.remainingIterations >= 0)
			f["remaining"] = std::min(app.remainingIterations, static_cast<int64_t>(kRemainingMax));
		if (std::isfinite(app.redistributionCost) && app.redistributionCost > 0)
			f["cost"] = app.redistributionCost;
		figures[id] = std::move(f);
	}
	return figures;
}

// The schema checked the figures' types and ranges; a peer's figures are taken only for an application hosted here
// whose root it is, and those it no longer says (rank 0 moved, the application ended) are forgotten.
void Core::learnRootFigures(const Message &m)
{
	const std::string &peer = m["from"].get_ref<const std::string &>();
	const auto said = m.find("root_apps");
	std::erase_if(rootFigures_, [&](const auto &entry) {
		return entry.second.agent == peer && (said == m.end() || !said->contains(entry.first));
	});
	if (said == m.end())
		return;
	for (const auto &[id, f] : said->items()) {
		if (!apps_.count(id) || rootAgentOf(id) != peer)
			continue;
		RootFigures &figures = rootFigures_[id];
		if (figures.agent != peer) {
			figures = RootFigures{};
			figures.agent = peer;
		}
		figures.size = f["size"].get<int64_t>();
		figures.remaining = f.value("remaining", int64_t{-1});
		figures.cost = f.value("cost", 0.0);
		if (const auto seconds = f.find("iteration_seconds"); seconds != f.end() && figures.size > 0) {
			std::vector<IterationSample> &sizes = figures.sizes;
			if (sizes.empty() || sizes.back().processes != figures.size)
				sizes.push_back({figures.size, seconds->get<double>()});
			else
				sizes.back().seconds = seconds->get<double>();
			if (sizes.size() > kSizesKept)
				sizes.erase(sizes.begin(), sizes.end() - kSizesKept);
		}
	}
}

void Core::applyRootFigures(ApplicationInfo &app) const
{
	const auto it = rootFigures_.find(app.id);
	if (it == rootFigures_.end() || hostsRank0(app) || rootAgentOf(app.id) != it->second.agent)
		return;
	const RootFigures &f = it->second;
	if (f.size > 0)
		app.totalProcesses = f.size;
	if (f.remaining >= 0)
		app.remainingIterations = f.remaining;
	if (f.cost > 0)
		app.redistributionCost = f.cost;
	if (!f.sizes.empty())
		app.sizes = f.sizes;
}

// A result from the root says the new size before its next heartbeat does.
void Core::resultToRootFigures(const Message &m)
{
	const auto it = rootFigures_.find(m["app"].get_ref<const std::string &>());
	if (it == rootFigures_.end() || it->second.agent != m.value("from", "") ||
	    !m["ok"].get<bool>() || !m.contains("after"))
		return;
	it->second.size = m["after"].get<int64_t>();
}

} // namespace malleo
