// SPDX-License-Identifier: Apache-2.0
#include "refusal_memory.h"

#include <algorithm>

namespace malleo::policy {

namespace {

bool adds(const std::string &op)
{
	return op == "split" || op == "migrate";
}

} // namespace

void RefusalMemory::forgetApp(const std::string &app)
{
	std::erase_if(caps_, [&](const auto &entry) { return std::get<0>(entry.first) == app; });
}

void RefusalMemory::learn(const CommandOutcome &outcome, const AppState &state, double now)
{
	const int64_t size = outcome.after > 0 ? outcome.after : outcome.before > 0 ? outcome.before : state.size;
	if (!outcome.ok) {
		if (outcome.most < 0)
			return; // the root agent's refusals (busy, hold-down...) and the bridge's `other` teach no cap
		RefusalCap cap{outcome.most, size, size, state.size, state.local, now, outcome.refusal};
		if (outcome.refusal == "pool_exhausted" && adds(outcome.op))
			caps_[{outcome.app, CapSide::Added, outcome.node}] = cap;
		else if ((outcome.refusal == "merge_ranks" || outcome.refusal == "too_few_active") &&
			 outcome.op == "merge")
			caps_[{outcome.app, CapSide::Removed, outcome.fromNode}] = cap;
		return;
	}
	// Done: the application changed. Only the spares of the node that just took processes are still known.
	std::optional<std::pair<Key, RefusalCap>> kept;
	if (adds(outcome.op)) {
		const Key key{outcome.app, CapSide::Added, outcome.node};
		if (auto it = caps_.find(key); it != caps_.end()) {
			RefusalCap cap = it->second;
			cap.most = std::max<int64_t>(0, cap.most - outcome.count);
			cap.sizeBefore = outcome.before > 0 ? outcome.before : cap.size;
			cap.size = size;
			cap.sizeSeen = state.size;
			cap.local = state.local;
			kept = {key, cap};
		}
	}
	forgetApp(outcome.app);
	if (kept)
		caps_[kept->first] = kept->second;
}

std::optional<RefusalCap> RefusalMemory::find(const Key &key, const AppState &state, double now) const
{
	const auto it = caps_.find(key);
	if (it == caps_.end())
		return std::nullopt;
	const RefusalCap &cap = it->second;
	// The registry's size follows the processes' reports, which may still say the size before the command.
	const bool sameSize = state.size <= 0 || cap.size <= 0 || state.size == cap.size ||
			      state.size == cap.sizeBefore || state.size == cap.sizeSeen;
	if (now - cap.at >= expiry_ || !sameSize || state.local != cap.local)
		return std::nullopt;
	return cap;
}

std::optional<RefusalCap> RefusalMemory::added(const std::string &app, const std::string &node, const AppState &state,
					       double now) const
{
	return find({app, CapSide::Added, node}, state, now);
}

std::optional<RefusalCap> RefusalMemory::removed(const std::string &app, const std::string &node,
						 const AppState &state, double now) const
{
	return find({app, CapSide::Removed, node}, state, now);
}

} // namespace malleo::policy
