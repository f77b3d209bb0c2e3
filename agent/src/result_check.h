// SPDX-License-Identifier: Apache-2.0
// What a coordinator's `result` may say about the command it was handed: the schema checked each field's type and
// size; this checks that they fit the command (result_check.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <malleo/message.h>

#include "action_commands.h"

namespace malleo {

// The longest a result's `duration` may be for a command recovered from a predecessor's journal, whose hand-out
// this agent did not see.
constexpr double kRecoveredDurationMax = 86400.0;
// Bytes a reconfiguration may say it moved: 2^53, where a double stops counting bytes one by one (8 PiB).
constexpr double kResultBytesMax = 9007199254740992.0;

// Empty when `result` (a `result` valid by the schema) fits `command`: an ok one's `before` and `after` differ as
// the operation does (a split of N adds N, a merge of N removes N, a migration keeps the count), a failed one's do
// not differ, neither is 0; `duration` is finite, not negative and at most `maxDuration` (the seconds since the
// command was handed out); `bytes` finite, not negative, at most kResultBytesMax. Otherwise one line saying what.
std::optional<std::string> checkResult(const Message &result, const Command &command, double maxDuration);

// `text` without control characters (C0, DEL and C1, which a terminal acts on) and at most `max` bytes, not cut
// inside a UTF-8 character; what a result's text is kept and told as.
std::string withoutControls(std::string_view text, std::size_t max);

} // namespace malleo
