// SPDX-License-Identifier: Apache-2.0
#include "json_text.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace malleo {

std::optional<nlohmann::json> parseJsonText(const std::string &text, bool comments, std::string &why)
{
	try {
		return nlohmann::json::parse(text, nullptr, true, comments);
	} catch (const nlohmann::json::parse_error &e) {
		// e.byte counts from 1 and points past the character that failed; at the end of the text, one past it.
		std::size_t at = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
		std::size_t line = 1;
		std::size_t lineStart = 0;
		for (std::size_t i = 0; i < at; ++i)
			if (text[i] == '\n') {
				++line;
				lineStart = i + 1;
			}
		// The parser fails at the end of the token it did not expect (`"id": 1 "peers"`: the closing quote);
		// a person looks for the token's start, where a missing comma goes.
		auto inWord = [](char c) {
			return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+';
		};
		if (at < text.size() && text[at] == '"') {
			while (at > lineStart && !(text[at - 1] == '"' && (at < 2 || text[at - 2] != '\\')))
				--at;
			at -= at > lineStart;
		} else if (at < text.size() && inWord(text[at]))
			while (at > lineStart && inWord(text[at - 1]))
				--at;
		// nlohmann's what(): "[json.exception.parse_error.101] parse error at line 2, column 5: syntax error
		// while parsing object key - unexpected '}'; expected string literal": its own reason, after the
		// place (which older versions give as a byte).
		std::string reason = e.what();
		if (std::size_t colon = reason.find(": "); colon != std::string::npos)
			reason = reason.substr(colon + 2);
		why = fmt::format("not valid JSON at line {}, column {}: {}", line, at - lineStart + 1, reason);
		return std::nullopt;
	}
}

std::optional<std::string> readTextFile(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		return std::nullopt;
	std::ostringstream text;
	text << in.rdbuf();
	if (in.bad())
		return std::nullopt;
	return text.str();
}

} // namespace malleo
