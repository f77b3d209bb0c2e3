// SPDX-License-Identifier: Apache-2.0
// The iterations an application has left, as its coordinator's `poll` says them (docs/protocol.md, `remaining`):
// the count it last said (PCM_Remaining_iterations, Session::remainingIterations) less the probes since it said it.
// The bridge's AgentCommands and the simulator's application both poll through this, so a decision module (sweetspot)
// sees the same horizon in the simulator as on a real run.
#pragma once

#include <algorithm>
#include <cstdint>

namespace malleo::pcm {

// -1 when the application never said it (the poll then carries no `remaining`); never below 0, and a probe before
// the one it was said at counts as that one.
inline std::int64_t remainingAtProbe(std::int64_t said, std::int64_t saidAtProbe, std::int64_t probe)
{
	if (said < 0)
		return -1;
	return std::max<std::int64_t>(0, said - std::max<std::int64_t>(0, probe - saidAtProbe));
}

} // namespace malleo::pcm
