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

// Runs the workload for about `milliseconds` on this thread and reports its speed.
Calibration calibrate(int milliseconds);

} // namespace malleo
