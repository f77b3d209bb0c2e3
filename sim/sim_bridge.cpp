// SPDX-License-Identifier: Apache-2.0
// The simulated application's PCM bridge: at each iteration boundary its coordinator polls the agent hosting
// rank 0 with the real `poll` message, plans the command it gets with the bridge's own planner (pcm_bridge's
// makePlan: the same slots, joiners, leavers and data shares a real run gets), carries the plan out on the
// simulated processes, pays for the data that changes node, and sends the real `result` once it is done. What the
// bridge refuses (no spare process on the node, too few processes to merge) is refused here with its words and its
// structured reason (`refusal`: pool_exhausted, too_few_active, other). The simulated processes are the C++ API's
// (reusable), so the PCM C API's merge_ranks refusal cannot happen here.
#include "sim_application.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include <malleo/command.h>

#include "plan/plan.h"
#include "plan/remaining.h"

namespace malleo::sim {

namespace {

constexpr const char *kBridgeClient = "malleo-pcm";

// Each slot's interval of the data, in slot order.
std::vector<std::pair<double, double>> intervals(const std::vector<double> &shares)
{
	std::vector<std::pair<double, double>> out;
	double at = 0.0;
	for (double s : shares) {
		out.emplace_back(at, at + s);
		at += s;
	}
	return out;
}

} // namespace

// The pool a launch in pool mode leaves on a node: `pool_per_core` processes per core in all (at least those
// that start active there), the ones not active parked as spares.
void SimApplication::fillPool(uint32_t node)
{
	SimNode *n = nodes_.node(node);
	if (!n)
		return;
	const int64_t slots = std::llround(static_cast<double>(n->cores()) * model_.poolPerCore);
	int64_t here = std::count_if(processes_.begin(), processes_.end(),
				     [&](const SimProcess &p) { return p.node == node; });
	for (; here < slots; ++here)
		processes_.push_back({newRank(), node, 0.0, false});
}

int64_t SimApplication::rootNode() const
{
	for (const SimProcess &p : processes_)
		if (p.rank == 0)
			return nodes_.node(p.node) ? static_cast<int64_t>(p.node) : -1;
	return -1;
}

// The coordinator's poll of the root agent, and the command of its reply as the bridge reads it (commandFromReply:
// checkCommand's rules, the same as AgentCommands'): false when there is none, or one the bridge would ignore.
bool SimApplication::pollCommand(uint32_t root, int64_t iteration, Command &command, uint64_t &id)
{
	Message poll = makeMessage("poll", kBridgeClient, nextMessageId_++);
	poll["app"] = model_.name;
	poll["iteration"] = iteration;
	poll["size"] = activeProcesses();
	// What the bridge's AgentCommands adds: the count the application said at launch (probe 0), less the probes
	// since.
	const int64_t remaining = pcm::remainingAtProbe(model_.reportsRemaining ? model_.iterations : -1, 0, iteration);
	if (remaining >= 0)
		poll["remaining"] = remaining;
	const Message reply = nodes_.local(root, poll);
	if (reply.value("type", "") != "command")
		return false;
	std::string problem; // the bridge says it on stderr and carries on; a simulation has no one to tell
	return commandFromReply(reply, command, id, problem);
}

// The membership as the bridge holds it: world ranks are the processes' ranks; those gone with their node are
// `left`. `shares` gets the data of each active process in slot order.
pcm::Membership SimApplication::membership(std::vector<double> &shares) const
{
	pcm::Membership m;
	uint32_t world = 0;
	for (const SimProcess &p : processes_)
		world = std::max(world, p.rank + 1);
	m.state.assign(world, pcm::ProcessState::Left);
	m.node.assign(world, std::string());
	m.reusable = true; // the C++ API's parked leavers can be taken back
	for (const SimProcess &p : processes_) {
		SimNode *n = nodes_.node(p.node);
		m.node[p.rank] = n ? n->id() : std::string();
		if (!n)
			continue;
		m.state[p.rank] = p.active ? pcm::ProcessState::Active : pcm::ProcessState::Spare;
		if (p.active) {
			m.active.push_back(static_cast<int>(p.rank));
			shares.push_back(p.data);
		}
	}
	m.weights = weights_;
	return m;
}

namespace {

// The data after: shares proportional to the plan's weights, else even (a split or merge rebalances), else (a
// migration without weights) each slot keeps its block.
std::vector<double> sharesAfter(const pcm::Plan &plan, const pcm::Membership &m, const std::vector<double> &shares)
{
	double total = 0.0;
	for (double s : shares)
		total += s;
	std::vector<double> after;
	if (!plan.weights.empty()) {
		double sum = 0.0;
		for (int64_t w : plan.weights)
			sum += static_cast<double>(w);
		for (int64_t w : plan.weights)
			after.push_back(total * static_cast<double>(w) / sum);
	} else if (plan.op == Operation::Migrate) {
		std::map<int, double> held;
		for (size_t i = 0; i < m.active.size(); ++i)
			held[m.active[i]] = shares[i];
		for (size_t i = 0; i < plan.after.size(); ++i)
			after.push_back(held.count(plan.after[i]) ? held[plan.after[i]] : shares[i]);
	} else {
		after.assign(plan.after.size(), total / static_cast<double>(plan.after.size()));
	}
	return after;
}

} // namespace

// What moving the data costs: each piece of the data whose owner changes, between the owners' nodes (the slowest
// link's share), or within a node; plus waking the joiners. `moved` gets the units that changed node.
double SimApplication::moveCost(const pcm::Plan &plan, const pcm::Membership &m, const std::vector<double> &shares,
				const std::vector<double> &after, double &moved) const
{
	std::map<int, uint32_t> nodeOf;
	for (const SimProcess &p : processes_)
		nodeOf[static_cast<int>(p.rank)] = p.node;
	const auto from = intervals(shares), to = intervals(after);
	std::map<uint32_t, double> sentInter;
	double intra = 0.0;
	moved = 0.0;
	for (size_t i = 0, j = 0; i < from.size() && j < to.size();) {
		const double overlap = std::min(from[i].second, to[j].second) - std::max(from[i].first, to[j].first);
		const int a = m.active[i], b = plan.after[j];
		if (overlap > 0 && a != b) {
			if (nodeOf[a] != nodeOf[b]) {
				sentInter[nodeOf[a]] += overlap;
				moved += overlap;
			} else {
				intra += overlap;
			}
		}
		if (from[i].second < to[j].second)
			++i;
		else
			++j;
	}
	double slowestLink = 0.0;
	for (const auto &[node, units] : sentInter)
		slowestLink = std::max(slowestLink, units * model_.bytesPerUnit / network_.bandwidth);
	return (plan.joiners.empty() ? 0.0 : model_.activationLatency) +
	       (sentInter.empty() ? 0.0 : network_.latency + slowestLink) +
	       intra * model_.bytesPerUnit * network_.intraSecondsPerByte;
}

// The processes in their new slot order with their data, the parked ones after them.
void SimApplication::applyPlan(const pcm::Plan &plan, const std::vector<double> &after)
{
	std::map<int, SimProcess> byRank;
	for (const SimProcess &p : processes_)
		byRank[static_cast<int>(p.rank)] = p;
	std::vector<SimProcess> next;
	for (size_t i = 0; i < plan.after.size(); ++i) {
		SimProcess p = byRank[plan.after[i]];
		p.active = true;
		p.data = after[i];
		next.push_back(p);
		byRank.erase(plan.after[i]);
	}
	for (const SimProcess &p : processes_)
		if (byRank.count(static_cast<int>(p.rank))) {
			SimProcess parked = p;
			parked.active = false;
			parked.data = 0.0;
			next.push_back(parked);
		}
	processes_ = std::move(next);
	weights_ = plan.weights;
}

double SimApplication::bridge(double now, int64_t iteration)
{
	const int64_t root = rootNode();
	if (root < 0)
		return 0.0;
	const uint32_t rootIndex = static_cast<uint32_t>(root);
	Command command;
	uint64_t commandId = 0;
	if (!pollCommand(rootIndex, iteration, command, commandId))
		return 0.0;

	std::vector<double> shares;
	const pcm::Membership m = membership(shares);
	pcm::Plan plan;
	std::string refusal;
	pcm::Refusal refusalKind; // the bridge's, for the agent's decision module
	if (execution_ == Execution::Migration && command.op != Operation::Migrate)
		refusal = fmt::format("{} of {}: this run's application only migrates whole processes",
				      operationName(command.op), command.count);
	else
		refusal = pcm::makePlan(command, iteration, m, plan, &refusalKind);
	const int64_t before = static_cast<int64_t>(m.active.size());
	Message result = makeMessage("result", kBridgeClient, nextMessageId_++);
	result["app"] = model_.name;
	result["command"] = commandId;
	result["iteration"] = iteration;
	result["before"] = before;
	if (!refusal.empty()) {
		refuse(operationName(command.op));
		result["ok"] = false;
		result["text"] = refusal.substr(0, kResultTextCut);
		result["refusal"] = {{"kind", refusalKind.kind}};
		if (refusalKind.most >= 0)
			result["refusal"]["most"] = refusalKind.most;
		result["after"] = before;
		result["duration"] = 0.0;
		nodes_.local(rootIndex, result);
		return 0.0;
	}

	const std::vector<double> after = sharesAfter(plan, m, shares);
	double moved = 0.0;
	const double cost = moveCost(plan, m, shares, after, moved);
	applyPlan(plan, after);
	done_[operationName(plan.op)]++;
	marks_.push_back({now, iteration, operationName(plan.op), command.count, command.from, command.node});

	result["ok"] = true;
	result["text"] = fmt::format("{} of {} done", operationName(plan.op), command.count);
	result["after"] = static_cast<int64_t>(plan.after.size());
	result["duration"] = cost;
	result["bytes"] = moved * model_.bytesPerUnit;
	// The result goes when the reconfiguration is over: the agents' hold-down counts from it.
	nodes_.after(cost, [this, rootIndex, result]() {
		if (nodes_.node(rootIndex))
			nodes_.local(rootIndex, result);
	});
	return cost;
}

} // namespace malleo::sim
