// SPDX-License-Identifier: Apache-2.0
// Reads fields of an agent's reply without trusting their shape: an agent of
// another version may lack a field or type it differently, and the views then
// show "-" instead of failing.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace malleo::cli {

using FieldPath = std::initializer_list<const char *>;

// The value at path (keys of nested objects), or nullptr.
const nlohmann::json *field(const nlohmann::json &j, FieldPath path);

std::optional<double> number(const nlohmann::json &j, FieldPath path);

// A scalar as text (strings unquoted), anything else as compact JSON; inert on a terminal (shownText).
std::string scalarText(const nlohmann::json &value);

// Text to print that came from an agent, a peer or a file: controls, C1 controls, invisible marks and invalid UTF-8
// shown as \xHH (printableText of <malleo/message.h>), the rest as it is. Applying it twice changes nothing more.
std::string shownText(std::string_view text);

// The value at path as text, or "-".
std::string text(const nlohmann::json &j, FieldPath path);

// The number at path with a fixed number of decimals, or "-".
std::string fixed(const nlohmann::json &j, FieldPath path, int decimals);

} // namespace malleo::cli
