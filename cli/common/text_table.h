// SPDX-License-Identifier: Apache-2.0
// Columns of text aligned for a terminal, as `ps` prints them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace malleo::cli {

class TextTable
{
public:
	explicit TextTable(std::vector<std::string> header);

	// Numbers read best aligned on the right.
	void alignRight(std::size_t column);
	void addRow(std::vector<std::string> cells);
	bool empty() const { return rows_.empty(); }

	// One line per row, without trailing spaces; each line ends in '\n'.
	std::string render() const;

private:
	std::vector<std::string> header_;
	std::vector<std::vector<std::string>> rows_;
	std::vector<bool> right_;
};

// Columns a string takes on a terminal (UTF-8 aware, one per code point).
std::size_t displayWidth(const std::string &text);

// Cuts text to at most width columns, ending in "…" when it was cut.
std::string clip(const std::string &text, std::size_t width);

} // namespace malleo::cli
