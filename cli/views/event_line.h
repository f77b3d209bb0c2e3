// SPDX-License-Identifier: Apache-2.0
// One agent event as one line of text, for `malleo events` and `malleo top`.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

namespace malleo::cli {

// "12:03:04.123  n2  wrm_sent        wrm_id=3 to=n1 ttl=4 why=idle".
// The time is on this machine's clock (EventStream::when()), so that events
// of several agents, each counting "t" from its own start, interleave right.
std::string eventLine(const nlohmann::json &event, std::chrono::system_clock::time_point arrived);

} // namespace malleo::cli
