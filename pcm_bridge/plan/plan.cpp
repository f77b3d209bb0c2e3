// SPDX-License-Identifier: Apache-2.0
#include "plan/plan.h"

#include <algorithm>
#include <set>

namespace malleo::pcm {

namespace {

// total × weight does not fit 64 bits for large buffers and weights; quotients and remainders must be exact.
__extension__ typedef __int128 Wide;

// The spare processes on `node`; unnamed, those anywhere but on `notOn` (the node a migration empties).
std::vector<int> spares(const Membership &membership, const std::string &node, const std::string &notOn = {})
{
	std::vector<int> out;
	for (std::size_t w = 0; w < membership.state.size(); ++w)
		if (membership.state[w] == ProcessState::Spare &&
		    (node.empty() ? membership.node[w] != notOn || notOn.empty() : membership.node[w] == node))
			out.push_back(static_cast<int>(w));
	return out;
}

// Where a spare may come from, in a refusal: " on node 'n2'", " off node 'n1'" or nothing.
std::string sparesWhere(const Command &command)
{
	if (!command.node.empty())
		return " on node '" + command.node + "'";
	return command.from.empty() ? std::string() : " off node '" + command.from + "'";
}

// The slots after a split: each process followed by the joiners that take the end of its block, as evenly as they
// go (the first processes one more). With balanced blocks every process then keeps the start of its block where it
// is, and only what the joiners take moves: in 2 -> 4, half the data, against three quarters with the joiners after
// the last slot (whose old process would pass its whole block on and take its predecessor's second half).
std::vector<int> interleave(const std::vector<int> &active, const std::vector<int> &joiners)
{
	std::vector<int> after;
	const std::size_t each = joiners.size() / active.size(), more = joiners.size() % active.size();
	auto next = joiners.begin();
	for (std::size_t i = 0; i < active.size(); ++i) {
		after.push_back(active[i]);
		const std::size_t take = each + (i < more ? 1 : 0);
		after.insert(after.end(), next, next + static_cast<std::ptrdiff_t>(take));
		next += static_cast<std::ptrdiff_t>(take);
	}
	return after;
}

// A merge's reverse of interleave: the slots in `survivors` consecutive groups, as even as they go (the first
// groups one more), the first process of each group staying and the others leaving; each survivor's new block then
// begins with its own. In 4 -> 2 half the data moves, against three quarters when the last slots leave (the second
// survivor passes its block on and takes the last two).
void groupSurvivors(const std::vector<int> &active, int survivors, std::vector<int> &after, std::vector<int> &leavers)
{
	after.clear();
	leavers.clear();
	const std::size_t groups = static_cast<std::size_t>(survivors);
	const std::size_t each = active.size() / groups, more = active.size() % groups;
	std::size_t slot = 0;
	for (std::size_t g = 0; g < groups; ++g) {
		const std::size_t size = each + (g < more ? 1 : 0);
		after.push_back(active[slot]);
		leavers.insert(leavers.end(), active.begin() + static_cast<std::ptrdiff_t>(slot + 1),
			       active.begin() + static_cast<std::ptrdiff_t>(slot + size));
		slot += size;
	}
}

// A merge of the processes of one node (an agent's command: its co-located processes fold). The C++ API may let any
// process leave; the PCM C API keeps the ranks of the processes that stay, so only the last slots can leave, and
// the merge is done only when they are on that node.
std::string mergeFrom(const Command &command, const Membership &membership, Plan &plan, const std::string &what,
		      Refusal &refusal)
{
	std::vector<int> onNode;
	for (int w : membership.active)
		if (membership.node[w] == command.from)
			onNode.push_back(w);
	// One process stays in any case.
	const auto mayLeave = [&](std::size_t n) {
		return std::min<std::int64_t>(static_cast<std::int64_t>(n),
					      static_cast<std::int64_t>(membership.active.size()) - 1);
	};
	if (static_cast<int>(onNode.size()) < command.count) {
		refusal = {"too_few_active", mayLeave(onNode.size())};
		return what + ": only " + processCount(onNode.size(), "active") + " on node '" + command.from + "'";
	}
	// The last of them leave: under either API the processes before them keep their slots.
	std::vector<int> leavers(onNode.end() - command.count, onNode.end());
	if (!membership.reusable &&
	    !std::equal(leavers.begin(), leavers.end(), membership.active.end() - command.count)) {
		// How many may: the last slots, as far back as they are all on that node.
		const auto last = std::find_if(membership.active.rbegin(), membership.active.rend(),
					       [&](int w) { return membership.node[w] != command.from; });
		refusal = {"merge_ranks", mayLeave(static_cast<std::size_t>(last - membership.active.rbegin()))};
		return what + " on node '" + command.from + "': the PCM C API keeps the ranks of the processes that stay, "
		       "so only the last " + processCount(static_cast<std::size_t>(command.count)) +
		       " may leave, and not all of them are on that node";
	}
	plan.leavers = leavers;
	plan.after.clear();
	for (int w : membership.active)
		if (std::find(leavers.begin(), leavers.end(), w) == leavers.end())
			plan.after.push_back(w);
	return {};
}

// A migration: `command.count` processes leave, each for a spare (on the node named `node`, when one is) that
// takes its slot.
std::string planMigration(const Command &command, const Membership &membership, Plan &plan, const std::string &what,
			 Refusal &refusal)
{
	const auto free = spares(membership, command.node, command.from);
	// The processes that move: those of the node named `from`, else the first ones not on the target.
	std::vector<int> sources;
	for (int w : membership.active)
		if (static_cast<int>(sources.size()) < command.count &&
		    (command.from.empty() ? command.node.empty() || membership.node[w] != command.node
					  : membership.node[w] == command.from))
			sources.push_back(w);
	if (static_cast<int>(sources.size()) < command.count) {
		refusal = {"too_few_active", static_cast<std::int64_t>(sources.size())};
		return what + ": only " + processCount(sources.size(), "active") +
		       (command.from.empty() ? " off node '" + command.node + "'" : " on node '" + command.from + "'");
	}
	if (static_cast<int>(free.size()) < command.count) {
		refusal = {"pool_exhausted", static_cast<std::int64_t>(free.size())};
		return what + ": only " + processCount(free.size(), "spare") + sparesWhere(command);
	}
	for (int i = 0; i < command.count; ++i) {
		auto slot = std::find(plan.after.begin(), plan.after.end(), sources[i]);
		*slot = free[i];
	}
	plan.leavers = sources;
	plan.joiners.assign(free.begin(), free.begin() + command.count);
	return {};
}

} // namespace

std::vector<std::int64_t> slotWeights(const std::map<std::string, std::int64_t> &nodeWeights,
				      const Membership &membership, const std::vector<int> &after)
{
	std::int64_t sum = 0;
	for (const auto &[node, w] : nodeWeights)
		sum += w;
	const std::int64_t mean = std::max<std::int64_t>(1, sum / static_cast<std::int64_t>(nodeWeights.size()));
	std::map<std::string, std::int64_t> perNode;
	for (int w : after)
		++perNode[membership.node[w]];
	// Scaled by the most processes on a node so that the quotient keeps its precision as an integer.
	std::int64_t most = 1;
	for (const auto &[node, count] : perNode)
		most = std::max(most, count);
	std::vector<std::int64_t> weights;
	for (int w : after) {
		const auto named = nodeWeights.find(membership.node[w]);
		const std::int64_t weight = named != nodeWeights.end() ? named->second : mean;
		weights.push_back(std::max<std::int64_t>(1, weight * most / perNode[membership.node[w]]));
	}
	return weights;
}

std::string processCount(std::size_t count, const char *kind)
{
	return std::to_string(count) + (kind ? std::string(" ") + kind : std::string()) +
	       (count == 1 ? " process" : " processes");
}

std::string makePlan(const Command &command, std::int64_t iteration, const Membership &membership, Plan &plan,
		     Refusal *refusalOut)
{
	Refusal ignored;
	Refusal &refusal = refusalOut ? *refusalOut : ignored;
	refusal = {};
	plan.op = Operation::None;
	plan.iteration = iteration;
	plan.before = membership.active;
	plan.after = membership.active;
	plan.joiners.clear();
	plan.leavers.clear();
	plan.weights.clear();
	const int active = static_cast<int>(membership.active.size());
	const std::string what = std::string(operationName(command.op)) + " of " + std::to_string(command.count);

	switch (command.op) {
	case Operation::None:
		return {};
	case Operation::Split: {
		const auto free = spares(membership, command.node);
		if (static_cast<int>(free.size()) < command.count) {
			refusal = {"pool_exhausted", static_cast<std::int64_t>(free.size())};
			return what + ": only " + processCount(free.size(), "spare") +
			       (command.node.empty() ? std::string() : " on node '" + command.node + "'");
		}
		plan.joiners.assign(free.begin(), free.begin() + command.count);
		plan.after = interleave(membership.active, plan.joiners);
		break;
	}
	case Operation::Merge:
		if (command.count >= active) {
			refusal = {"too_few_active", std::max(0, active - 1)};
			return what + ": only " + processCount(static_cast<std::size_t>(active), "active");
		}
		if (!command.from.empty()) {
			if (std::string refused = mergeFrom(command, membership, plan, what, refusal); !refused.empty())
				return refused;
		} else if (membership.reusable) {
			groupSurvivors(membership.active, active - command.count, plan.after, plan.leavers);
		} else {
			// The PCM C API keeps the ranks of the processes that stay: the papers' skeleton allocates the
			// merged buffer when its rank equals PCM_Merge_datacnts' merge_rank and switches to it when the
			// rank PCM_Merge gives back still does. So the last slots leave.
			plan.leavers.assign(membership.active.end() - command.count, membership.active.end());
			plan.after.resize(active - command.count);
		}
		break;
	case Operation::Migrate:
		if (std::string refused = planMigration(command, membership, plan, what, refusal); !refused.empty())
			return refused;
		break;
	}
	if (!command.weights.empty() && command.weights.size() != plan.after.size())
		return what + ": " + std::to_string(command.weights.size()) + " weights for " +
		       processCount(plan.after.size());
	// A migration moves blocks unchanged unless told otherwise; a split or merge rebalances.
	plan.weights = !command.weights.empty()	    ? command.weights
		       : !command.nodeWeights.empty() ? slotWeights(command.nodeWeights, membership, plan.after)
		       : command.op == Operation::Migrate ? membership.weights
							   : std::vector<std::int64_t>{};
	plan.op = command.op;
	return {};
}

void applyPlan(const Plan &plan, Membership &membership)
{
	for (int w : plan.leavers)
		membership.state[w] = membership.reusable ? ProcessState::Spare : ProcessState::Left;
	for (int w : plan.joiners)
		membership.state[w] = ProcessState::Active;
	membership.active = plan.after;
	membership.weights = plan.weights;
}

std::vector<int> participants(const Plan &plan)
{
	std::set<int> all(plan.before.begin(), plan.before.end());
	all.insert(plan.after.begin(), plan.after.end());
	return {all.begin(), all.end()};
}

int slotAfter(const Plan &plan, int worldRank)
{
	const auto slot = std::find(plan.after.begin(), plan.after.end(), worldRank);
	return slot == plan.after.end() ? -1 : static_cast<int>(slot - plan.after.begin());
}

std::size_t planWords(int world)
{
	// op, iteration, epoch, sizes of the five lists, reusable; the lists; the state of every world rank.
	return 9 + 6 * static_cast<std::size_t>(world);
}

std::vector<std::int64_t> encodePlan(const Plan &plan, const Membership &membership)
{
	const int world = static_cast<int>(membership.state.size());
	std::vector<std::int64_t> words;
	words.reserve(planWords(world));
	words.push_back(static_cast<std::int64_t>(plan.op));
	words.push_back(plan.iteration);
	words.push_back(plan.epoch);
	for (const auto *list : {&plan.before, &plan.after, &plan.joiners, &plan.leavers})
		words.push_back(static_cast<std::int64_t>(list->size()));
	words.push_back(static_cast<std::int64_t>(plan.weights.size()));
	words.push_back(membership.reusable ? 1 : 0);
	for (const auto *list : {&plan.before, &plan.after, &plan.joiners, &plan.leavers})
		words.insert(words.end(), list->begin(), list->end());
	words.insert(words.end(), plan.weights.begin(), plan.weights.end());
	for (auto s : membership.state)
		words.push_back(static_cast<std::int64_t>(s));
	words.resize(planWords(world), 0);
	return words;
}

void decodePlan(const std::vector<std::int64_t> &words, Plan &plan, Membership &membership)
{
	plan.op = static_cast<Operation>(words[0]);
	plan.iteration = words[1];
	plan.epoch = words[2];
	membership.reusable = words[8] != 0;
	std::size_t at = 9;
	std::vector<int> *lists[] = {&plan.before, &plan.after, &plan.joiners, &plan.leavers};
	for (int i = 0; i < 4; ++i) {
		const auto n = static_cast<std::size_t>(words[3 + i]);
		lists[i]->assign(words.begin() + at, words.begin() + at + n);
		at += n;
	}
	const auto weights = static_cast<std::size_t>(words[7]);
	plan.weights.assign(words.begin() + at, words.begin() + at + weights);
	at += weights;
	for (auto &s : membership.state)
		s = static_cast<ProcessState>(words[at++]);
	membership.active = plan.before;
}

std::vector<std::int64_t> targetCounts(std::int64_t total, int parts, const std::vector<std::int64_t> &weights)
{
	if (weights.empty() || static_cast<int>(weights.size()) != parts)
		return balancedCounts(total, parts);
	return weightedCounts(total, weights);
}

std::vector<std::int64_t> weightedCounts(std::int64_t total, const std::vector<std::int64_t> &weights)
{
	const std::size_t parts = weights.size();
	Wide sum = 0;
	for (auto w : weights)
		sum += w;
	std::vector<std::int64_t> counts(parts, 0);
	std::vector<std::pair<Wide, std::size_t>> remainders;
	std::int64_t given = 0;
	for (std::size_t i = 0; i < parts; ++i) {
		const Wide quota = static_cast<Wide>(total) * weights[i];
		counts[i] = static_cast<std::int64_t>(quota / sum);
		given += counts[i];
		remainders.emplace_back(quota % sum, i);
	}
	std::stable_sort(remainders.begin(), remainders.end(),
			 [](const auto &a, const auto &b) { return a.first > b.first; });
	for (std::size_t i = 0; given < total; ++i, ++given)
		++counts[remainders[i].second];
	if (total >= static_cast<std::int64_t>(parts)) {
		for (std::size_t i = 0; i < parts; ++i) {
			if (counts[i] > 0)
				continue;
			const auto largest = std::max_element(counts.begin(), counts.end()) - counts.begin();
			--counts[static_cast<std::size_t>(largest)];
			++counts[i];
		}
	}
	return counts;
}

std::vector<std::int64_t> balancedCounts(std::int64_t total, int parts)
{
	std::vector<std::int64_t> counts(parts, total / parts);
	for (std::int64_t i = 0; i < total % parts; ++i)
		++counts[i];
	return counts;
}

} // namespace malleo::pcm
