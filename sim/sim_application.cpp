// SPDX-License-Identifier: Apache-2.0
#include "sim_application.h"

#include <algorithm>
#include <cmath>

namespace malleo::sim {

namespace {

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
	if (execution_ != Execution::Central)
		for (uint32_t n : nodes)
			fillPool(n);
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

void SimApplication::nodeJoined(uint32_t node, double now)
{
	(void)now;
	if (execution_ != Execution::Central && launched_)
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

double SimApplication::reconfigure(double now, int64_t iteration, int64_t remaining)
{
	probe_ = iteration;
	double cost = evacuate(now);
	for (uint32_t node : joined_)
		fillPool(node);
	joined_.clear();
	if (execution_ == Execution::Central)
		cost += central(now, remaining);
	else
		cost += bridge(now, iteration);
	syncRegistry(now);
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
			m["cpu_share"] = cpuShare(p.node, perNode[p.node], now); // in cores, as libmalleo_pmpi measures it
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
