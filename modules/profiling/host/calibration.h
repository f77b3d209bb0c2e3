// SPDX-License-Identifier: Apache-2.0
// PW by measurement: a fixed workload timed on the calling thread.
#pragma once

#include <cstdint>

namespace malleo {

// Rounds of the calibration workload per second that count as a per-core speed
// of 1.0 (see calibration.cpp for the machine it was taken on).
inline constexpr double kReferenceRoundsPerSecond = 400000.0;

struct Calibration {
	double perCoreSpeed = 0.0; // relative to the reference machine
	uint64_t rounds = 0;	   // workload rounds completed
	double seconds = 0.0;	   // time they took
};

// The per-core speed of `rounds` rounds done in `seconds`; 0 if no time elapsed.
double perCoreSpeed(uint64_t rounds, double seconds);

// Which time the calibration counts. Wall: a core busy with other work measures as slower (what it would give a
// process now). ThreadCpu: the calibrating thread's own CPU time, so a node whose CPU is a throttled slice of a core
// (cgroup quota) measures the core's speed, and the slice's size is counted once, by the quota.
enum class CalibrationClock { Wall, ThreadCpu };

// Runs the workload for about `milliseconds` (of the clock's time) on this thread and reports its speed.
Calibration calibrate(int milliseconds, CalibrationClock clock = CalibrationClock::Wall);

} // namespace malleo
