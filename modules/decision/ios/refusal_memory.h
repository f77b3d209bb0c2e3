// SPDX-License-Identifier: Apache-2.0
// What the PCM bridge's refusals taught about an application, so that ios does not ask again for what the bridge
// just said it cannot do (issue 27: a split larger than the pool of parked spares, a merge the PCM C API cannot make,
// asked again and again). Pure: the module feeds it the results its agent is told of (onCommandResult) and asks it
// before each proposal.
//
// Two kinds of cap, each per application and node:
//  - added on node X: a split or migration onto X was refused with `pool_exhausted`; X has `most` spare processes,
//    so no split or migration onto X of more than that (none when 0);
//  - removed from node Y: a merge of Y's processes was refused with `merge_ranks` or `too_few_active`; at most
//    `most` of them may leave (none when 0).
// A cap holds while the application is as it was when the bridge said it: its size (the result's `after`, or the
// size this agent's registry gave it then: an agent that is not the application's root knows only the launch's
// world size, parked processes included) and the active processes it has on this agent's node. A done command
// changes what the bridge can do: one that moved `k` processes onto X leaves X with `most` − k spares (the cap
// follows, its size the result's); any other done command of the application forgets its caps (processes that left a
// node free spares there, and the last slots move). A cap is also forgotten `expiry` seconds after it was learned: a
// node's spares also change with commands other agents ask for, whose results this agent may not hear of.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace malleo::policy {

// A command's result, as the memory needs it.
struct CommandOutcome {
	std::string app;
	bool ok = false;
	std::string op;	      // "split", "merge", "migrate"
	int64_t count = 0;    // processes the command named
	std::string node;     // where processes go (split, migrate)
	std::string fromNode; // whose processes leave (merge, migrate)
	std::string refusal;  // the bridge's kind when refused: pool_exhausted, merge_ranks, too_few_active, other
	int64_t most = -1;    // with the kind: the most the same operation could have done; -1: not said
	int64_t before = -1;  // active processes of the application before and after; -1: not said
	int64_t after = -1;
};

// What the application looks like to this agent now: its size and its active processes on this node.
struct AppState {
	int64_t size = 0;  // 0: not known (the cap is not checked against it)
	int64_t local = 0;
};

struct RefusalCap {
	int64_t most = 0;
	int64_t size = 0;      // the application's size when learned (0: not known)
	int64_t sizeBefore = 0; // the size before the done command that updated the cap (the agent's registry may lag)
	int64_t sizeSeen = 0;   // the registry's size when learned or updated
	int64_t local = 0;
	double at = 0.0;
	std::string refusal; // the kind it was learned from
};

enum class CapSide { Added, Removed };

class RefusalMemory
{
public:
	explicit RefusalMemory(double expiry = 60.0) : expiry_(expiry) {}
	void setExpiry(double seconds) { expiry_ = seconds; }
	double expiry() const { return expiry_; }

	// A result this agent was told of; `state` is the application as this agent sees it when the result comes.
	void learn(const CommandOutcome &outcome, const AppState &state, double now);

	// The most processes a split or migration may bring onto `node`, and the most a merge may take off `node`:
	// the cap, while it holds for `state` (nullopt: nothing known that still holds).
	std::optional<RefusalCap> added(const std::string &app, const std::string &node, const AppState &state,
					double now) const;
	std::optional<RefusalCap> removed(const std::string &app, const std::string &node, const AppState &state,
					  double now) const;

	// Forgets the caps learned `expiry` seconds ago or more, and those of applications `present` says are gone.
	template <typename Present> void forget(double now, Present present)
	{
		std::erase_if(caps_, [&](const auto &entry) {
			return now - entry.second.at >= expiry_ || !present(std::get<0>(entry.first));
		});
	}
	std::size_t size() const { return caps_.size(); }

private:
	using Key = std::tuple<std::string, CapSide, std::string>; // app, side, node
	std::optional<RefusalCap> find(const Key &key, const AppState &state, double now) const;
	void forgetApp(const std::string &app);

	double expiry_;
	std::map<Key, RefusalCap> caps_;
};

} // namespace malleo::policy
