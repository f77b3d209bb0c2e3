// SPDX-License-Identifier: Apache-2.0
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

bool isActive(const SimProcess &p)
{
	return p.active;
}

} // namespace

SimApplication::SimApplication(ApplicationModel model, NetworkModel network, Execution execution,
			       NodeAccess nodes)
	: model_(std::move(model)), network_(network), execution_(execution), nodes_(std::move(nodes))
{
}

int64_t SimApplication::activeProcesses() const
{
	return std::count_if(processes_.begin(), processes_.end(), isActive);
}

int64_t SimApplication::activeOn(uint32_t node) const
{
	return std::count_if(processes_.begin(), processes_.end(),
			     [&](const SimProcess &p) { return p.active && p.node == node; });
}

int64_t SimApplication::reconfigurationCount() const
{
	int64_t n = 0;
	for (const auto &[kind, count] : done_)
		n += count;
	return n;
}

void SimApplication::launch(double now, const std::vector<uint32_t> &nodes)
{
	int64_t cores = 0;
	for (uint32_t n : nodes)
		cores += nodes_.node(n)->cores();
	const int64_t count = model_.processes
				      ? model_.processes
				      : std::max<int64_t>(1, std::llround(static_cast<double>(cores) * model_.processesPerCore));
	const double units = static_cast<double>(model_.units ? model_.units : count);
	const int64_t spread = static_cast<int64_t>(nodes.size());
	for (int64_t i = 0; i < count; ++i) {
		uint32_t node = nodes[static_cast<size_t>(i * spread / count)];
		processes_.push_back({newRank(), node, units / static_cast<double>(count), true});
	}
	if (execution_ == Execution::Swap) {
		const int64_t parked = std::max<int64_t>(1, model_.overAllocation);
		for (uint32_t n : nodes)
			for (int64_t k = 0; k < parked; ++k)
				processes_.push_back({newRank(), n, 0.0, false});
	}
	launched_ = true;
	syncRegistry(now);
}

double SimApplication::cpuShare(uint32_t node, int64_t active, double now) const
{
	SimNode *n = nodes_.node(node);
	if (!n)
		return 1.0;
	const double cores = n->cores();
	const double demand = static_cast<double>(active) + n->externalLoad(now) * cores;
	// Processes and the external load share the CPUs fairly; a process never
	// gets more than one core.
	return demand <= cores ? 1.0 : cores / demand;
}

IterationTiming SimApplication::evaluate(const std::vector<SimProcess> &processes, double now) const
{
	std::map<uint32_t, int64_t> perNode;
	std::vector<const SimProcess *> active;
	for (const SimProcess &p : processes)
		if (p.active) {
			perNode[p.node]++;
			active.push_back(&p);
		}
	IterationTiming t;
	if (active.empty())
		return t;
	std::map<uint32_t, double> share;
	for (const auto &[node, count] : perNode)
		share[node] = cpuShare(node, count, now);

	const double link = network_.latency;
	auto transfer = [&](uint32_t a, uint32_t b, double bytes) {
		return a == b ? bytes * network_.intraSecondsPerByte : link + bytes / network_.bandwidth;
	};
	double gather = 0.0;
	const uint32_t root = active.front()->node;
	for (size_t i = 0; i < active.size(); ++i) {
		const SimProcess &p = *active[i];
		SimNode *n = nodes_.node(p.node);
		const double speed = n ? n->speed() : 1.0;
		double seconds = p.data * model_.workPerUnit / (speed * share[p.node]);
		if (model_.pattern == "neighbour") {
			if (i > 0)
				seconds += transfer(p.node, active[i - 1]->node, model_.boundaryBytes);
			if (i + 1 < active.size())
				seconds += transfer(p.node, active[i + 1]->node, model_.boundaryBytes);
		} else if (i > 0) {
			const double bytes = p.data * model_.resultBytesPerUnit;
			seconds += transfer(p.node, root, bytes);
			if (p.node != root)
				gather += bytes / network_.bandwidth; // rank 0's link takes them one by one
		}
		t.perProcess.push_back(seconds);
	}
	const double slowest = *std::max_element(t.perProcess.begin(), t.perProcess.end());
	double mean = 0.0;
	for (double s : t.perProcess)
		mean += s;
	mean /= static_cast<double>(t.perProcess.size());
	const double barrier = perNode.size() > 1
				       ? link * std::ceil(std::log2(static_cast<double>(active.size())))
				       : 0.0;
	t.seconds = slowest + gather + barrier;
	t.imbalance = slowest > 0 ? (slowest - mean) / slowest : 0.0;
	return t;
}

void SimApplication::queueAction(uint32_t node, const nlohmann::json &event)
{
	queued_.push_back({node, event.value("kind", ""), event.value("params", nlohmann::json::object())});
}

void SimApplication::nodeJoined(uint32_t node, double now)
{
	(void)now;
	if (execution_ == Execution::Swap && launched_)
		joined_.push_back(node);
}

double SimApplication::interNodeSeconds(double units) const
{
	return network_.latency + units * model_.bytesPerUnit / network_.bandwidth;
}

int64_t SimApplication::findRank(uint32_t rank) const
{
	for (size_t i = 0; i < processes_.size(); ++i)
		if (processes_[i].rank == rank)
			return static_cast<int64_t>(i);
	return -1;
}

double SimApplication::reconfigure(double now, int64_t remaining)
{
	double cost = evacuate(now);
	for (uint32_t node : joined_) {
		if (!nodes_.node(node))
			continue;
		processes_.push_back({newRank(), node, 0.0, false});
		done_["spawn_parked"]++;
	}
	joined_.clear();
	std::vector<Queued> queued = std::move(queued_);
	queued_.clear();
	// The actions of different agents are carried out at once, each between
	// its own nodes: the slowest sets the pause.
	for (const Queued &a : queued)
		cost = std::max(cost, perform(a, now));
	if (execution_ == Execution::Central)
		cost += central(now, remaining);
	syncRegistry(now);
	return cost;
}

double SimApplication::perform(const Queued &a, double now)
{
	const std::string &kind = a.kind;
	if (execution_ == Execution::Static || execution_ == Execution::Central) {
		refuse(kind);
		return 0.0;
	}
	if (kind == "split") {
		if (execution_ == Execution::Full)
			return split(a);
		if (execution_ == Execution::Migration) {
			// Migration only: move r whole processes if the node has more than r.
			int64_t target = nodes_.indexOf(a.params.value("target", ""));
			int64_t r = a.params.value("r", int64_t{0});
			std::vector<uint32_t> local;
			for (const SimProcess &p : processes_)
				if (p.active && p.node == a.node)
					local.push_back(p.rank);
			if (target < 0 || r <= 0 || static_cast<int64_t>(local.size()) <= r) {
				refuse("split");
				return 0.0;
			}
			std::vector<uint32_t> moving(local.end() - r, local.end());
			return moveRanks(moving, a.node, static_cast<uint32_t>(target), "migrate");
		}
		refuse(kind);
		return 0.0;
	}
	if (kind == "transfer" || kind == "migrate") {
		if (a.params.value("after_split", false))
			return 0.0; // carried out with its split
		if (execution_ != Execution::Full && execution_ != Execution::Migration) {
			refuse(kind);
			return 0.0;
		}
		int64_t target = nodes_.indexOf(a.params.value("target", ""));
		std::vector<uint32_t> ranks;
		for (const nlohmann::json &r : a.params.value("ranks", nlohmann::json::array()))
			if (r.is_number_unsigned())
				ranks.push_back(r.get<uint32_t>());
		if (target < 0 || ranks.empty()) {
			refuse(kind);
			return 0.0;
		}
		return moveRanks(ranks, a.node, static_cast<uint32_t>(target), "migrate");
	}
	if (kind == "merge") {
		if (execution_ == Execution::Full)
			return merge(a);
		refuse(kind);
		return 0.0;
	}
	if (kind == "swap") {
		if (execution_ == Execution::Full || execution_ == Execution::Swap)
			return swap(a);
		refuse(kind);
		return 0.0;
	}
	if (kind == "grow" || kind == "shrink") {
		if (execution_ == Execution::Full)
			return resize(a, now);
		refuse(kind);
		return 0.0;
	}
	refuse(kind.empty() ? "unknown" : kind);
	return 0.0;
}

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
	if (!a.params.contains("activate") || !a.params["activate"].is_number_unsigned()) {
		refuse("swap");
		return 0.0;
	}
	int64_t in = findRank(a.params["activate"].get<uint32_t>());
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

// What the agents know follows where the processes are: a process that moved
// is deregistered where it was and registered where it is.
void SimApplication::syncRegistry(double now)
{
	(void)now;
	const int64_t size = activeProcesses();
	std::map<uint32_t, uint32_t> current;
	for (const SimProcess &p : processes_)
		current[p.rank] = p.node;
	for (auto it = registered_.begin(); it != registered_.end();) {
		auto c = current.find(it->first);
		if (c == current.end() || c->second != it->second) {
			if (nodes_.node(it->second)) {
				Message m = makeMessage("deregister", model_.name, 0);
				m["app"] = model_.name;
				m["rank"] = it->first;
				nodes_.local(it->second, m);
			}
			it = registered_.erase(it);
		} else {
			++it;
		}
	}
	for (const SimProcess &p : processes_) {
		if (registered_.count(p.rank) || !nodes_.node(p.node))
			continue;
		Message m = makeMessage("register", model_.name, 0);
		m["app"] = model_.name;
		m["rank"] = p.rank;
		m["pid"] = 100000 + p.rank;
		m["size"] = size;
		m["malleable"] = true;
		m["units"] = 1;
		nodes_.local(p.node, m);
		registered_[p.rank] = p.node;
	}
}

void SimApplication::report(double now, double iterationSeconds, const IterationTiming &timing)
{
	(void)timing;
	if (reports_++ % static_cast<int64_t>(model_.reportPeriod) != 0)
		return;
	const int64_t size = activeProcesses();
	double smallest = 0.0;
	for (const SimProcess &p : processes_)
		if (p.active && p.data > 0 && (smallest == 0.0 || p.data < smallest))
			smallest = p.data;
	std::map<uint32_t, int64_t> perNode;
	std::vector<const SimProcess *> active;
	for (const SimProcess &p : processes_)
		if (p.active) {
			perNode[p.node]++;
			active.push_back(&p);
		}
	std::map<uint32_t, size_t> position;
	for (size_t i = 0; i < active.size(); ++i)
		position[active[i]->rank] = i;
	const uint32_t root = active.empty() ? 0 : active.front()->node;
	for (const SimProcess &p : processes_) {
		if (!nodes_.node(p.node))
			continue;
		Message m = makeMessage("app_report", model_.name, 0);
		m["app"] = model_.name;
		m["rank"] = p.rank;
		m["size"] = size;
		m["active"] = p.active;
		double local = 0.0, remote = 0.0;
		if (p.active) {
			m["units"] = std::max<int64_t>(1, std::llround(smallest > 0 ? p.data / smallest : 1.0));
			SimNode *node = nodes_.node(p.node);
			m["cpu_share"] = cpuShare(p.node, perNode[p.node], now) / node->cores();
			size_t i = position[p.rank];
			if (model_.pattern == "neighbour") {
				for (int64_t j : {static_cast<int64_t>(i) - 1, static_cast<int64_t>(i) + 1})
					if (j >= 0 && j < static_cast<int64_t>(active.size()))
						(active[static_cast<size_t>(j)]->node == p.node ? local : remote) +=
						    model_.boundaryBytes;
			} else if (i > 0) {
				(p.node == root ? local : remote) += p.data * model_.resultBytesPerUnit;
			}
		} else {
			m["units"] = 1;
			m["cpu_share"] = 0.0;
		}
		m["bytes_local"] = local;
		m["bytes_remote"] = remote;
		if (p.rank == 0)
			m["iteration_times"] = nlohmann::json::array({iterationSeconds});
		nodes_.local(p.node, m);
	}
}

} // namespace malleo::sim
