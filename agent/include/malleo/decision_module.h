// SPDX-License-Identifier: Apache-2.0
// Decision modules: when and how to reconfigure.
#pragma once

#include <string>

#include <malleo/module.h>
#include <malleo/overlay_view.h>

namespace malleo {

// A work-stealing request as the receiving agent sees it.
struct WorkRequest {
	std::string origin;
	NodeProfile originProfile;
	unsigned ttl = 0;
	unsigned hops = 0;
};

struct WorkVerdict {
	// true: this node answers the request (it has work to give the origin);
	// false: the request travels on.
	bool answer = false;
	// The inputs and intermediate numbers of the decision, shown in events and
	// logs so that a surprising decision can be explained.
	nlohmann::json reasons = nlohmann::json::object();
};

class DecisionModule : public Module
{
public:
	virtual WorkVerdict onWorkRequest(const OverlayView &view, const WorkRequest &request) = 0;
};

} // namespace malleo
