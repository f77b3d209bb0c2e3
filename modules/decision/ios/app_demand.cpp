// SPDX-License-Identifier: Apache-2.0
#include "app_demand.h"

#include <algorithm>
#include <cmath>

namespace malleo::ios {

/*
 * D is what the application's processes here used over the last report, C what they could have used had they
 * computed all the time: each process at most one core, all of them at most their own use plus the node's free cores.
 * D / C is then the share of an iteration they spend computing, the only part a split or a transfer can shorten: a
 * heat2d paced at 20 ms an iteration that computes for 1 ms has D = 0.05 of a core and C = 1, so moving half of it
 * away gains 2.5 %, not the 50 % eq. 1-5 predict.
 *
 * On a node busy with other work there are no free cores, but a process that wanted more CPU would still get its
 * fair share beside that work. CPU figures alone cannot tell many busy tasks that starve a CPU-bound process from one
 * busy task beside a process that waits, so the other load is counted as the fewest tasks that make it: a heat2d
 * paced beside one hog on one core uses 1 % of it and could have half. A CPU-bound process beside several hogs then
 * looks as if it computed less than it does, and its moves gain less: loaded nodes are the evacuation rule's.
 *
 * UPW_j is kept wherever it is the larger: a CPU-bound application beside another load (UPW_j counts both, as the
 * paper does) and every application of the simulator, whose processes use the CPU they get (never less than the fair
 * share above), see the paper's figures.
 */
AppDemand appDemand(const ApplicationInfo &app, const NodeProfile &here)
{
	AppDemand d;
	const double cores = std::max(here.cores, 1);
	int64_t active = 0;
	for (const ProcessInfo &p : app.local)
		if (p.active) {
			++active;
			d.usedCores += p.ownLoad;
		}
	d.fraction = here.upw;
	if (!(d.usedCores > 0.0))
		return d; // no report yet, or a profiler that does not measure CPU
	d.measured = true;
	// What the processes could use: the free cores, and on a busy node the fair share the kernel's scheduler would
	// give them beside the other load, counted as the fewest tasks that make it (each uses a core at most).
	const double activeCount = static_cast<double>(active);
	const double foreign = std::max(0.0, here.upw * cores - d.usedCores);
	const double fairShare = std::min(1.0, cores / (std::ceil(foreign - 1e-6) + activeCount));
	d.reachCores = std::min(activeCount, std::max(d.usedCores + here.apw * cores, activeCount * fairShare));
	d.computeShare = std::clamp(d.usedCores / d.reachCores, 0.0, 1.0);
	d.fraction = std::max(here.upw, std::min(1.0, d.reachCores / cores));
	return d;
}

int64_t remoteCapacity(const NodeProfile &origin, const NodeProfile &here)
{
	const double coreHere = here.pw / std::max(here.cores, 1);
	if (!(coreHere > 0.0))
		return 1;
	return std::max<int64_t>(1, std::llround(std::clamp(origin.apw * origin.pw / coreHere, 0.0, 1e6)));
}

} // namespace malleo::ios
