// SPDX-License-Identifier: Apache-2.0
// Decision modules: when and how to reconfigure.
//
// A decision module is pure: the core calls it with a view (the node's profile,
// its peers and theirs, the applications on the node, the time, a seeded random
// generator) and gets verdicts and actions back. It opens no socket, reads no
// clock and starts no thread, so the same module runs in malleod, in unit tests
// and in the simulator. docs/writing-a-decision-module.md has a complete example.
#pragma once

#include <map>
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

// What a work request's origin hosts of one application: its active processes there.
struct HostedShare {
	int64_t units = 0; // their data units (seed 001's Nb_i)
	double load = 0.0; // the cores they use (their CPU time over wall time)
};

// A work-stealing request as the receiving agent sees it.
struct WorkRequest {
	std::string origin;
	NodeProfile originProfile;
	unsigned ttl = 0;
	unsigned hops = 0;
	// By application id, what the origin hosts; an application not named has no active process there. Empty from an
	// agent that did not say. (ABI 1.3: appended, so a module built against an older ABI reads the fields above as
	// before.)
	std::map<std::string, HostedShare> hosted;
};

// What became of a command asked for an application (docs/protocol.md, `reconf_result`): the PCM bridge's outcome,
// or the root agent's refusal before the bridge saw it. Passed to onCommandResult. (ABI 1.2)
struct CommandResult {
	std::string app;
	bool ok = false;
	bool askedHere = false; // this agent asked for it (its decision module's action, or a force sent here)
	std::string op;		// "split", "merge", "migrate"; empty when the request did not check out
	int64_t count = 0;
	std::string node;     // where processes go (split, migrate); empty: the bridge chose
	std::string fromNode; // whose processes leave (merge, migrate); empty: the bridge chose
	std::string trigger;  // "wrm", "tick", "drain", "force"
	std::string kind;     // the action's kind ("split", "transfer", "swap", ...)
	std::string decision; // the decision module that asked
	// Not ok: who refused. "failed": the bridge (then `refusal` says why); the root agent's own: "busy",
	// "hold_down", "draining", "not_root", "unknown_app", "not_malleable", "bad_command", "dropped", "lost".
	std::string code;
	std::string text; // the one line for people
	// The bridge's refusal (empty when ok or not the bridge's): "pool_exhausted" (too few spare processes where
	// the command asked for them), "merge_ranks" (the PCM C API lets only the last slots leave), "too_few_active"
	// (fewer active processes than the command names), "other"; a newer bridge may send kinds not listed here.
	std::string refusal;
	// With "pool_exhausted": the spare processes there, the most a split (or migration) there could have moved in;
	// with "merge_ranks" and "too_few_active": the most processes that could have left. -1: not said.
	int64_t most = -1;
	int64_t before = -1; // active processes before and after, when the bridge said; -1 otherwise
	int64_t after = -1;
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

	// A command of an application was carried out or refused: called on the agent that asked for it and on the
	// agents of the nodes it names, each time it hears the result (before the next tick), done or refused, with
	// the structured reason, so that a module does not ask again for what the bridge just said it cannot do. The
	// view is the agent's as on a tick (the application's size already the result's). Nothing is returned: act on
	// the next tick. A module built against ABI 1.1 or older is not called. (ABI 1.2)
	virtual void onCommandResult(const DecisionView &view, const CommandResult &result)
	{
		(void)view;
		(void)result;
	}
};

} // namespace malleo
