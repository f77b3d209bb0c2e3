// SPDX-License-Identifier: Apache-2.0
// Decision modules: when and how to reconfigure.
//
// A decision module is pure: the core calls it with a view (the node's profile,
// its peers and theirs, the applications on the node, the time, a seeded random
// generator) and gets verdicts and actions back. It opens no socket, reads no
// clock and starts no thread, so the same module runs in malleod, in unit tests
// and in the simulator. docs/writing-a-decision-module.md has a complete example.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <malleo/application.h>
#include <malleo/module.h>
#include <malleo/overlay_view.h>

namespace malleo {

struct DecisionView {
	const OverlayView &overlay; // self, time, local profile, peers, rng
	std::span<const ApplicationInfo> apps;
};

// What a decision module asks for. The core records it as an event with its
// reasons and, unless the agent's configuration says "act": false, asks the
// application's root agent to carry it out (docs/writing-a-decision-module.md,
// "What happens to an action"). reasons["why"], a one-line string, is the
// reason people see beside the reconfiguration.
struct Action {
	// "split", "merge", "migrate", "transfer", "grow", "shrink", "swap", or a
	// module's own kind (carried and shown, not executed).
	std::string kind;
	std::string app; // the application's id; empty for a node-level action
	// Kind-specific numbers: target agent, process counts, ranks, sizes.
	nlohmann::json params = nlohmann::json::object();
	// The inputs and intermediate numbers (APW, UPW, PW, N, ρ, n, l, r, gain,
	// σ_i, σ, slope...), so that a surprising decision can be explained.
	nlohmann::json reasons = nlohmann::json::object();
};

// A work-stealing request as the receiving agent sees it.
struct WorkRequest {
	std::string origin;
	NodeProfile originProfile;
	unsigned ttl = 0;
	unsigned hops = 0;
};

struct WorkVerdict {
	// true: this node answers the request (it has work for the origin);
	// false: the request travels on.
	bool answer = false;
	nlohmann::json reasons = nlohmann::json::object();
	// What answering means: the reconfigurations that would give the origin work.
	std::vector<Action> actions;
};

class DecisionModule : public Module
{
public:
	// A work-stealing request reached this node.
	virtual WorkVerdict onWorkRequest(const DecisionView &view, const WorkRequest &request) = 0;

	// Called every decision interval (config `decision.interval`): actions
	// that need no request, such as merging on a stable node or growing an
	// application towards its sweet spot.
	virtual std::vector<Action> onTick(const DecisionView &view) = 0;

	// This node is leaving (`malleo drain`, SIGTERM): the actions that take the processes of each application
	// off it (migrations, merges). Called once the drain starts and again every decision interval while an
	// application still has active processes here and nothing asked for it awaits its result; the agent exits
	// once it hosts none, or at its drain deadline. A module without an answer leaves them to the deadline.
	// (ABI 1.1)
	virtual std::vector<Action> onDrain(const DecisionView &view)
	{
		(void)view;
		return {};
	}
};

} // namespace malleo
