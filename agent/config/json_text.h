// SPDX-License-Identifier: Apache-2.0
// A JSON file read by a person's hand (a configuration): when it is not JSON, where.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace malleo {

// Parses TEXT (comments allowed when `comments`). On a syntax error returns nothing and sets `why` to
// "not valid JSON at line L, column C: <what nlohmann expected>" (nlohmann says only a byte offset).
std::optional<nlohmann::json> parseJsonText(const std::string &text, bool comments, std::string &why);

// The whole file at PATH as text, or nothing (errno says why).
std::optional<std::string> readTextFile(const std::string &path);

} // namespace malleo
