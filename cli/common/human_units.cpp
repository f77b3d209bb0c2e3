// SPDX-License-Identifier: Apache-2.0
#include "human_units.h"

#include <cmath>
#include <ctime>

#include <fmt/format.h>

namespace malleo::cli {

std::string formatDuration(double seconds)
{
	if (!std::isfinite(seconds) || seconds < 0)
		return "-";
	if (seconds < 10)
		return fmt::format("{:.2f} s", seconds);
	if (seconds < 60)
		return fmt::format("{:.1f} s", seconds);
	auto s = static_cast<long long>(seconds);
	if (s < 3600)
		return fmt::format("{}m {:02}s", s / 60, s % 60);
	if (s < 86400)
		return fmt::format("{}h {:02}m", s / 3600, s % 3600 / 60);
	return fmt::format("{}d {:02}h", s / 86400, s % 86400 / 3600);
}

std::string formatBytes(double bytes)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		++u;
	}
	return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

std::string formatClock(std::chrono::system_clock::time_point when)
{
	using namespace std::chrono;
	std::time_t t = system_clock::to_time_t(when);
	std::tm local{};
	localtime_r(&t, &local);
	auto ms = duration_cast<milliseconds>(when.time_since_epoch()).count() % 1000;
	return fmt::format("{:02}:{:02}:{:02}.{:03}", local.tm_hour, local.tm_min, local.tm_sec, ms);
}

} // namespace malleo::cli
