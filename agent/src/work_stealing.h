// SPDX-License-Identifier: Apache-2.0
// Work stealing, a component of the core (core.h): the WRMs this agent sends when idle or newly joined, with their
// TTL, timeout and backoff, and those it answers or forwards for others. It reads the overlay from Membership; what
// it needs of the applications (what this node hosts, the decision's actions) comes through WorkStealingHooks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <malleo/application.h>
#include <malleo/decision_module.h>
#include <malleo/protocol_module.h>

#include "core_context.h"
#include "membership.h"

namespace malleo {

struct WorkStealingHooks {
	// This node drains: it asks for no work and gives none away but its own, by onDrain.
	std::function<bool()> draining;
	// What this node hosts of each application, as a WRM says it ("hosted").
	std::function<nlohmann::json()> hostedShares;
	// The applications the decision module sees.
	std::function<std::vector<ApplicationInfo>()> applications;
	// An action of the decision module's answer to a WRM, carried out.
	std::function<void(const Action &action, double now, CoreOutputs &out)> act;
	// A peer message refused (Core::reject).
	std::function<void(const Rejection &rejection, const Message &message, double now, CoreOutputs &out)> reject;
};

class WorkStealing
{
public:
	WorkStealing(CoreContext &ctx, ProtocolModule &protocol, DecisionModule &decision, Membership &membership,
		     WorkStealingHooks hooks);

	void start(double now);
	// An unanswered WRM timed out; a new one sent when this node is idle (or has just joined).
	void tick(double now, CoreOutputs &out);
	// The first peer found: a WRM at the next tick if work_stealing.wrm_on_join.
	void joined();
	void onWrm(const Message &m, double now, CoreOutputs &out);
	void onWrmReply(const Message &m, double now, CoreOutputs &out);
	// `status`'s "wrm": outstanding, backoff, next_in.
	nlohmann::json status(double now) const;

private:
	struct OutstandingWrm {
		uint64_t id;
		double sentAt;
	};

	void sendWrm(double now, const char *why, CoreOutputs &out);
	unsigned defaultTtl() const;

	CoreContext &ctx_;
	ProtocolModule &protocol_;
	DecisionModule &decision_;
	Membership &membership_;
	WorkStealingHooks hooks_;

	std::optional<OutstandingWrm> wrm_;
	uint64_t nextWrmId_ = 1;
	double nextWrmAt_ = 0.0;
	double backoff_ = 0.0;
	unsigned unansweredInRow_ = 0;
	bool wrmOnJoinPending_ = false;
};

} // namespace malleo
