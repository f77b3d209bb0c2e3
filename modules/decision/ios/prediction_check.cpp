// SPDX-License-Identifier: Apache-2.0
#include "prediction_check.h"

#include <algorithm>

namespace malleo::ios {

void PredictionCheck::predicted(const ApplicationInfo &app, int64_t after, double gain, double now)
{
	if (app.sizes.empty() || app.sizes.back().processes != app.totalProcesses || !(gain > 0.0))
		return;
	pending_[app.id] = {app.totalProcesses, after, app.sizes.back().seconds, gain, now};
}

void PredictionCheck::observe(const DecisionView &view, double settle, double expiry)
{
	const double now = view.overlay.now;
	for (auto it = pending_.begin(); it != pending_.end();) {
		const Pending &p = it->second;
		auto app = std::find_if(view.apps.begin(), view.apps.end(),
					[&](const ApplicationInfo &a) { return a.id == it->first; });
		const bool splitDone = app != view.apps.end() && app->lastSplit >= p.at;
		if (splitDone && now - app->lastSplit >= settle && !app->sizes.empty() &&
		    app->sizes.back().processes == p.after && p.secondsBefore > 0.0) {
			const double realized = 1.0 - app->sizes.back().seconds / p.secondsBefore;
			const double cameTrue = std::clamp(realized / p.gain, 0.0, 1.0);
			trust_ = std::max(kFloor, trust_ + 0.5 * (cameTrue - trust_));
			it = pending_.erase(it);
		} else if (app == view.apps.end() || now - p.at > expiry ||
			   (splitDone && app->totalProcesses != p.after && now - app->lastSplit >= settle)) {
			it = pending_.erase(it); // gone, refused, or made into another size than planned
		} else {
			++it;
		}
	}
}

} // namespace malleo::ios
