// SPDX-License-Identifier: Apache-2.0
// Injected failures (MALLEO_FAULT), so tests can prove that a failed reconfiguration leaves the run intact:
//   agree-timeout@I  one participant never answers the agreement of the operation at probe I
//   die@I            one participant kills itself (SIGKILL) instead of answering it: a real process death, which
//                    the run survives when it is a joiner (a split's) under a launcher that lets the job go on
//                    (mpirun --enable-recovery)
//   refuse@I         one participant answers isUnmalleable
//   redistribute@I   one participant reports a failed data transfer after the data has moved
//   spawn@I          spawn mode: the spawn of the operation at probe I fails (no process is started)
//   stall-agree@I    the coordinator waits MALLEO_FAULT_STALL seconds (1.5) once every vote is in, before it sends
//                    the decision: a window in the middle of the agreement for a test to act in (kill the agent)
//   stall-redistribute@I  the same once the data has moved, before the outcome is agreed on
// I may be `*`: every operation (an agent's command comes at a probe no test can name in advance). A stall is
// announced on stderr when it begins.
// The participant is the last one, in world rank order, other than the coordinator.
#pragma once

#include <cstdint>
#include <set>
#include <string>

namespace malleo::pcm {

struct Faults {
	std::set<std::int64_t> agreeTimeout;
	std::set<std::int64_t> die;
	std::set<std::int64_t> refuse;
	std::set<std::int64_t> redistribute;
	std::set<std::int64_t> spawn;
	std::set<std::int64_t> stallAgree;
	std::set<std::int64_t> stallRedistribute;
	double stallSeconds = 1.5;
};

// Whether `kinds` names the operation at probe `iteration`, itself or as `*` (kAnyIteration).
constexpr std::int64_t kAnyIteration = -1;
inline bool faultAt(const std::set<std::int64_t> &kinds, std::int64_t iteration)
{
	return kinds.count(iteration) || kinds.count(kAnyIteration);
}

// Returns an empty string or one line saying what is wrong with `text`.
std::string parseFaults(const std::string &text, Faults &out);

} // namespace malleo::pcm
