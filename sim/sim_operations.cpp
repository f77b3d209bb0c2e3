// SPDX-License-Identifier: Apache-2.0
// What the simulator does that no bridge command does: processes stranded on a node that went down move to a live
// node (a real application would lose them), and the central scheduler's baseline. Each returns the seconds it
// costs; the agents' commands are carried out by sim_bridge.cpp.
#include "sim_application.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace malleo::sim {

namespace {

// The central scheduler resizes only for a gain above this fraction of the
// iteration time, and weighs the cost against at most this many iterations.
constexpr double kCentralMinGain = 0.05;
constexpr int64_t kCentralHorizon = 10;

} // namespace

double SimApplication::evacuate(double now)
{
	std::vector<uint32_t> up = nodes_.upNodes();
	std::set<uint32_t> upSet(up.begin(), up.end());
	bool stranded = std::any_of(processes_.begin(), processes_.end(),
				    [&](const SimProcess &p) { return !upSet.count(p.node); });
	if (!stranded || up.empty())
		return 0.0;
	// Parked spares on a node that left are simply gone.
	std::erase_if(processes_, [&](const SimProcess &p) {
		return !p.active && !upSet.count(p.node) && p.rank != 0;
	});
	std::map<uint32_t, int64_t> load;
	for (const SimProcess &p : processes_)
		if (p.active && upSet.count(p.node))
			load[p.node]++;
	// A static application stays on the nodes it has while any is left.
	std::vector<uint32_t> choices = up;
	if (execution_ == Execution::Static && !load.empty()) {
		choices.clear();
		for (const auto &[node, count] : load)
			choices.push_back(node);
	}
	double moved = 0.0;
	int64_t count = 0;
	for (SimProcess &p : processes_) {
		if (upSet.count(p.node))
			continue;
		uint32_t best = choices.front();
		double bestLoad = 1e300;
		for (uint32_t n : choices) {
			SimNode *node = nodes_.node(n);
			double free = node->cores() * std::max(0.05, 1.0 - node->externalLoad(now)) * node->speed();
			double l = static_cast<double>(load[n] + 1) / free;
			if (l < bestLoad) {
				bestLoad = l;
				best = n;
			}
		}
		p.node = best;
		if (p.active)
			load[best]++;
		moved += p.data;
		++count;
	}
	// Rank 0 speaks for the application to its agent: a parked rank 0 moves
	// rather than goes.
	for (SimProcess &p : processes_)
		if (p.rank == 0 && !upSet.count(p.node))
			p.node = choices.front();
	std::erase_if(processes_, [&](const SimProcess &p) { return !upSet.count(p.node); });
	if (!count)
		return 0.0;
	done_["evacuate"] += count;
	marks_.push_back({now, probe_, "evacuate", count, {}, {}});
	return model_.spawnLatency + interNodeSeconds(moved);
}

// ReSHAPE-like: a scheduler that sees every node resizes the application at
// each iteration boundary to one process per free core, with data in
// proportion to each process's speed, when the predicted gain over the next
// iterations pays for the redistribution.
double SimApplication::central(double now, int64_t remaining)
{
	std::vector<uint32_t> up = nodes_.upNodes();
	double total = 0.0;
	for (const SimProcess &p : processes_)
		total += p.data;
	struct Slot {
		uint32_t node;
		int64_t processes;
		double speed;
	};
	std::vector<Slot> slots;
	double weight = 0.0;
	for (uint32_t n : up) {
		SimNode *node = nodes_.node(n);
		double free = node->cores() * (1.0 - node->externalLoad(now));
		int64_t procs = static_cast<int64_t>(std::floor(free + 0.5));
		if (procs < 1)
			continue;
		double perProcess = node->speed() * std::min(1.0, free / static_cast<double>(procs));
		slots.push_back({n, procs, perProcess});
		weight += perProcess * static_cast<double>(procs);
	}
	if (slots.empty() || weight <= 0)
		return 0.0;
	std::vector<uint32_t> ranks;
	for (const SimProcess &p : processes_)
		ranks.push_back(p.rank);
	std::sort(ranks.begin(), ranks.end());
	std::vector<SimProcess> plan;
	size_t next = 0;
	for (const Slot &s : slots)
		for (int64_t k = 0; k < s.processes; ++k) {
			uint32_t rank = next < ranks.size() ? ranks[next++] : nextRank_ + static_cast<uint32_t>(next++ - ranks.size());
			plan.push_back({rank, s.node, total * s.speed / weight, true});
		}
	const double before = evaluate(processes_, now).seconds;
	const double after = evaluate(plan, now).seconds;
	std::map<uint32_t, double> oldData, newData;
	for (const SimProcess &p : processes_)
		oldData[p.node] += p.data;
	for (const SimProcess &p : plan)
		newData[p.node] += p.data;
	double moved = 0.0;
	for (uint32_t n : up)
		moved += std::abs(newData[n] - oldData[n]);
	moved /= 2;
	bool spawns = plan.size() > processes_.size();
	for (const auto &[n, d] : newData)
		spawns |= oldData.find(n) == oldData.end();
	const double cost = interNodeSeconds(moved) + (spawns ? model_.spawnLatency : 0.0);
	const double gain = before - after;
	if (!(gain > kCentralMinGain * before) ||
	    gain * static_cast<double>(std::min(remaining, kCentralHorizon)) <= cost)
		return 0.0;
	nextRank_ += static_cast<uint32_t>(plan.size() > ranks.size() ? plan.size() - ranks.size() : 0);
	processes_ = std::move(plan);
	done_["resize"]++;
	marks_.push_back({now, probe_, "resize", static_cast<int64_t>(activeProcesses()), {}, {}});
	return cost;
}

} // namespace malleo::sim
