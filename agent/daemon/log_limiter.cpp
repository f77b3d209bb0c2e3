// SPDX-License-Identifier: Apache-2.0
#include "log_limiter.h"

namespace malleo {

namespace {

// Kinds remembered at most: the key holds only the channel and a reason from a fixed set,
// but a bound costs nothing.
constexpr std::size_t kMaxKinds = 256;

} // namespace

LogLimiter::Verdict LogLimiter::admit(const std::string &kind, double now)
{
	auto it = windows_.find(kind);
	if (it == windows_.end()) {
		if (windows_.size() >= kMaxKinds)
			windows_.clear();
		it = windows_.emplace(kind, Window{now, 0, 0}).first;
	}
	Window &w = it->second;
	Verdict verdict{false, 0};
	if (now - w.start >= window_) {
		verdict.suppressedBefore = w.suppressed;
		w = Window{now, 0, 0};
	}
	if (w.lines < linesPerWindow_) {
		++w.lines;
		verdict.log = true;
	} else {
		++w.suppressed;
	}
	return verdict;
}

} // namespace malleo
