// SPDX-License-Identifier: Apache-2.0
// How the simulated application carries out each kind of action on its processes: split, move, merge, swap,
// evacuate a leaving node, resize to a size, and the central scheduler's baseline. Each returns the seconds the
// reconfiguration costs; sim_application.cpp queues actions and applies them at iteration boundaries.
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

// 1-to-N split of the node's processes into n pieces: l stay, r start on the
// target, contiguous in the decomposition so that neighbours stay neighbours.
double SimApplication::split(const Queued &a)
{
	const int64_t n = a.params.value("n", int64_t{0});
	const int64_t r = a.params.value("r", int64_t{0});
	const int64_t target = nodes_.indexOf(a.params.value("target", ""));
	std::vector<size_t> local;
	double data = 0.0;
	for (size_t i = 0; i < processes_.size(); ++i)
		if (processes_[i].active && processes_[i].node == a.node) {
			local.push_back(i);
			data += processes_[i].data;
		}
	if (target < 0 || static_cast<uint32_t>(target) == a.node || local.empty() || n < 1 ||
	    r < 1 || r >= n || data <= 0) {
		refuse("split");
		return 0.0;
	}
	std::vector<uint32_t> ranks;
	for (size_t i : local)
		ranks.push_back(processes_[i].rank);
	std::sort(ranks.begin(), ranks.end());
	std::vector<SimProcess> pieces;
	for (int64_t k = 0; k < n; ++k) {
		uint32_t rank = k < static_cast<int64_t>(ranks.size()) ? ranks[static_cast<size_t>(k)] : newRank();
		uint32_t node = k < n - r ? a.node : static_cast<uint32_t>(target);
		pieces.push_back({rank, node, data / static_cast<double>(n), true});
	}
	const size_t at = local.front();
	for (auto it = local.rbegin(); it != local.rend(); ++it)
		processes_.erase(processes_.begin() + static_cast<long>(*it));
	processes_.insert(processes_.begin() + static_cast<long>(std::min(at, processes_.size())),
			  pieces.begin(), pieces.end());
	done_["split"]++;
	const double moved = data * static_cast<double>(r) / static_cast<double>(n);
	return model_.spawnLatency + interNodeSeconds(moved);
}

double SimApplication::moveRanks(std::vector<uint32_t> ranks, uint32_t from, uint32_t to,
				 const char *kind)
{
	if (!nodes_.node(to) || from == to) {
		refuse(kind);
		return 0.0;
	}
	double moved = 0.0;
	int64_t count = 0;
	for (uint32_t rank : ranks) {
		int64_t i = findRank(rank);
		if (i < 0 || !processes_[static_cast<size_t>(i)].active ||
		    processes_[static_cast<size_t>(i)].node != from)
			continue;
		processes_[static_cast<size_t>(i)].node = to;
		moved += processes_[static_cast<size_t>(i)].data;
		++count;
	}
	if (!count) {
		refuse(kind);
		return 0.0;
	}
	done_[kind] += count;
	return model_.spawnLatency + interNodeSeconds(moved);
}

// The listed processes still on the node become `into` processes; rank 0,
// if among them, survives so that the application keeps its root.
double SimApplication::merge(const Queued &a)
{
	std::vector<uint32_t> ranks;
	for (const nlohmann::json &r : a.params.value("ranks", nlohmann::json::array()))
		if (r.is_number_unsigned()) {
			int64_t i = findRank(r.get<uint32_t>());
			if (i >= 0 && processes_[static_cast<size_t>(i)].active &&
			    processes_[static_cast<size_t>(i)].node == a.node)
				ranks.push_back(r.get<uint32_t>());
		}
	std::sort(ranks.begin(), ranks.end());
	const int64_t into = std::max<int64_t>(1, a.params.value("into", int64_t{1}));
	if (static_cast<int64_t>(ranks.size()) <= into) {
		refuse("merge");
		return 0.0;
	}
	double data = 0.0;
	for (uint32_t rank : ranks)
		data += processes_[static_cast<size_t>(findRank(rank))].data;
	std::set<uint32_t> survivors(ranks.begin(), ranks.begin() + into);
	std::erase_if(processes_, [&](const SimProcess &p) {
		return std::find(ranks.begin(), ranks.end(), p.rank) != ranks.end() &&
		       !survivors.count(p.rank);
	});
	for (SimProcess &p : processes_)
		if (survivors.count(p.rank))
			p.data = data / static_cast<double>(into);
	done_["merge"]++;
	return data * model_.bytesPerUnit * network_.intraSecondsPerByte;
}

double SimApplication::swap(const Queued &a)
{
	int64_t in = -1;
	if (a.params.contains("activate") && a.params["activate"].is_number_unsigned()) {
		in = findRank(a.params["activate"].get<uint32_t>());
	} else {
		// The active side names the node only, as the bridge's migrate does: a spare parked there wakes.
		int64_t node = nodes_.indexOf(a.params.value("activate_agent", ""));
		for (size_t i = 0; node >= 0 && i < processes_.size(); ++i)
			if (!processes_[i].active && processes_[i].node == static_cast<uint32_t>(node)) {
				in = static_cast<int64_t>(i);
				break;
			}
	}
	int64_t out = -1;
	if (a.params.contains("deactivate") && a.params["deactivate"].is_number_unsigned()) {
		out = findRank(a.params["deactivate"].get<uint32_t>());
	} else {
		// The module names the peer: its root agent knows which rank runs there.
		int64_t node = nodes_.indexOf(a.params.value("deactivate_agent", ""));
		for (size_t i = 0; node >= 0 && i < processes_.size(); ++i)
			if (processes_[i].active && processes_[i].node == static_cast<uint32_t>(node)) {
				out = static_cast<int64_t>(i);
				break;
			}
	}
	if (in < 0 || out < 0 || processes_[static_cast<size_t>(in)].active ||
	    !processes_[static_cast<size_t>(out)].active) {
		refuse("swap");
		return 0.0;
	}
	SimProcess &to = processes_[static_cast<size_t>(in)];
	SimProcess &from = processes_[static_cast<size_t>(out)];
	const double data = from.data;
	to.data = data;
	to.active = true;
	from.data = 0.0;
	from.active = false;
	// The process woken takes the other's place in the decomposition.
	std::swap(to, from);
	done_["swap"]++;
	return model_.activationLatency + interNodeSeconds(data);
}

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
		if (execution_ == Execution::Swap && p.active) {
			auto spare = std::find_if(processes_.begin(), processes_.end(), [&](const SimProcess &q) {
				return !q.active && upSet.count(q.node);
			});
			if (spare != processes_.end()) {
				spare->active = true;
				spare->data = p.data;
				p.active = false;
				p.data = 0.0;
				moved += spare->data;
				++count;
				continue;
			}
		}
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
	return model_.spawnLatency + interNodeSeconds(moved);
}

// grow / shrink (the sweetspot module, ReSHAPE's resize): the application
// takes `size` processes. A new process goes to the node with the most free
// cores for its processes; a shrink removes the newest processes (rank 0
// stays). The data is then spread evenly again, as ReSHAPE's block-cyclic
// redistribution does, and the units that change node are paid for.
double SimApplication::resize(const Queued &a, double now)
{
	const int64_t size = a.params.value("size", int64_t{0});
	const int64_t current = activeProcesses();
	if (size < 1 || size == current || (a.kind == "grow") != (size > current)) {
		refuse(a.kind);
		return 0.0;
	}
	std::map<uint32_t, double> oldData;
	double total = 0.0;
	for (const SimProcess &p : processes_)
		if (p.active) {
			oldData[p.node] += p.data;
			total += p.data;
		}
	bool spawned = false;
	if (size > current) {
		const std::vector<uint32_t> up = nodes_.upNodes();
		for (int64_t k = current; k < size; ++k) {
			uint32_t best = 0;
			double bestFree = -1e300;
			for (uint32_t n : up) {
				SimNode *node = nodes_.node(n);
				const double free = node->cores() * (1.0 - node->externalLoad(now)) -
						    static_cast<double>(activeOn(n));
				if (free > bestFree) {
					best = n;
					bestFree = free;
				}
			}
			if (bestFree == -1e300)
				break;
			processes_.push_back({newRank(), best, 0.0, true});
			spawned = true;
		}
	} else {
		int64_t remove = current - size;
		for (size_t i = processes_.size(); i-- > 0 && remove > 0;)
			if (processes_[i].active && processes_[i].rank != 0) {
				processes_.erase(processes_.begin() + static_cast<long>(i));
				--remove;
			}
	}
	const double share = total / static_cast<double>(activeProcesses());
	std::map<uint32_t, double> newData;
	for (SimProcess &p : processes_)
		if (p.active) {
			p.data = share;
			newData[p.node] += share;
		}
	double moved = 0.0;
	for (const auto &[n, d] : newData)
		moved += std::abs(d - oldData[n]);
	for (const auto &[n, d] : oldData)
		if (!newData.count(n))
			moved += d;
	done_[a.kind]++;
	return (spawned ? model_.spawnLatency : 0.0) + interNodeSeconds(moved / 2);
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
	return cost;
}

} // namespace malleo::sim
