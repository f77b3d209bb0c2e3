// SPDX-License-Identifier: Apache-2.0
// Durations, clock times and sizes as people read them.
#pragma once

#include <chrono>
#include <string>

namespace malleo::cli {

// "0.42 s", "12.3 s", "5m 03s", "2h 05m", "3d 04h".
std::string formatDuration(double seconds);

// "512 B", "12.3 KiB", "1.5 MiB", "2.3 GiB".
std::string formatBytes(double bytes);

// Local wall-clock time "HH:MM:SS.mmm".
std::string formatClock(std::chrono::system_clock::time_point when);

} // namespace malleo::cli
