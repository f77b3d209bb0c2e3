// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

namespace malleo::pmpi {

// MALLEO_PROFILE: off makes every wrapper a straight call to PMPI; summary records everything
// except the per-peer matrix; full (the default) records everything.
enum class Mode : uint8_t { Off, Summary, Full };

extern Mode gMode;

inline bool profilingOff()
{
	return gMode == Mode::Off;
}

inline bool perPeer()
{
	return gMode == Mode::Full;
}

int worldSize();
int worldRank();
uint64_t startTicks();

void onInit();
void onFinalize();
void onAbort();

} // namespace malleo::pmpi
