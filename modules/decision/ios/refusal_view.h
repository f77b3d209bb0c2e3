// SPDX-License-Identifier: Apache-2.0
// The refusal memory (refusal_memory.h) between a decision module and the agent: the application as the memory
// keys it, and a command's result as the memory learns it. Shared by ios, sweetspot and swap; refusal_memory.h
// itself stays free of the module interface, for its unit tests.
#pragma once

#include <algorithm>

#include <malleo/decision_module.h>

#include "refusal_memory.h"

namespace malleo::policy {

// Active processes of the application on this node.
inline int64_t activeCount(const ApplicationInfo &app)
{
	return std::count_if(app.local.begin(), app.local.end(), [](const ProcessInfo &p) { return p.active; });
}

// The application as the refusal memory checks it: its size and its active processes here.
inline AppState appState(const ApplicationInfo &app)
{
	return {app.totalProcesses, activeCount(app)};
}

// A result the agent told the module of, learned with the application as it is now.
inline void learnResult(RefusalMemory &memory, const DecisionView &view, const CommandResult &result)
{
	AppState state;
	for (const ApplicationInfo &app : view.apps)
		if (app.id == result.app)
			state = appState(app);
	memory.learn({result.app, result.ok, result.op, result.count, result.node, result.fromNode, result.refusal,
		      result.most, result.before, result.after},
		     state, view.overlay.now);
}

// Forgets what expired and what was learned of applications no longer in the view; once a tick.
inline void forgetGone(RefusalMemory &memory, const DecisionView &view)
{
	memory.forget(view.overlay.now, [&](const std::string &id) {
		return std::any_of(view.apps.begin(), view.apps.end(), [&](const ApplicationInfo &a) { return a.id == id; });
	});
}

} // namespace malleo::policy
