// SPDX-License-Identifier: Apache-2.0
// One agent event said in words, for the event pane of `malleo top`: what happened, without the
// agent that says it (the pane folds the same outcome told by several agents into one row), with
// numbers to 3 significant digits.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace malleo::cli {

// "asks n4 for work (idle, APW 0.737), attempt 1", "sees peer n3", "passes n2's work request 6 on".
std::string eventWords(const nlohmann::json &event);

// A number as people read it: 3 significant digits, no exponent below a million ("0.737", "12.3", "4500").
std::string roundedNumber(double value);

// A row of the event pane: when, which agents said it, and what.
struct EventRow {
	std::chrono::system_clock::time_point at;
	std::vector<std::string> nodes;
	std::string words;
};

// Adds what agent said at `at` to rows (oldest first): into the row of the same words from
// another agent less than 2 s before or after, or as a new row.
void foldEvent(std::vector<EventRow> &rows, std::chrono::system_clock::time_point at,
	       const std::string &agent, const std::string &words);

// "12:03:04.123  n1,n2,n4  sees peer n3"; more than three agents are counted ("5 nodes").
std::string eventRowLine(const EventRow &row);

} // namespace malleo::cli
