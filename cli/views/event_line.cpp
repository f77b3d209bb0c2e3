// SPDX-License-Identifier: Apache-2.0
#include "event_line.h"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "human_units.h"
#include "reply_fields.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

// Fields that identify what happened come first, in this order; the rest follow by name.
constexpr std::array kLeading = {"peer",   "to", "from",  "via",   "responder", "wrm_id", "origin",
				 "ttl",    "hops", "why", "reason", "channel", "code"};
// Fields every event has, shown elsewhere in the line or not at all.
constexpr std::array kEnvelope = {"type", "seq", "t", "agent"};
constexpr std::size_t kValueWidth = 60;
constexpr std::size_t kAgentWidth = 6;
constexpr std::size_t kTypeWidth = 14;

template<typename Array>
bool among(const Array &keys, std::string_view key)
{
	return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::string pair(const std::string &key, const nlohmann::json &value)
{
	if (value.is_null() || (value.is_string() && value.get_ref<const std::string &>().empty()))
		return {};
	return fmt::format(" {}={}", key, clip(scalarText(value), kValueWidth));
}

} // namespace

std::string eventLine(const nlohmann::json &event, std::chrono::system_clock::time_point arrived)
{
	std::string agent = text(event, {"agent"});
	std::string type = text(event, {"type"});
	std::string line = fmt::format("{}  {:<{}}  {:<{}}", formatClock(arrived), agent,
				       kAgentWidth, type, kTypeWidth);
	if (!event.is_object())
		return line;
	for (const char *key : kLeading)
		if (auto it = event.find(key); it != event.end())
			line += pair(key, *it);
	for (auto it = event.begin(); it != event.end(); ++it)
		if (!among(kLeading, it.key()) && !among(kEnvelope, it.key()))
			line += pair(it.key(), it.value());
	line.erase(line.find_last_not_of(' ') + 1);
	return line;
}

} // namespace malleo::cli
