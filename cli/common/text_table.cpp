// SPDX-License-Identifier: Apache-2.0
#include "text_table.h"

#include <algorithm>

#include "reply_fields.h"

namespace malleo::cli {

namespace {

constexpr const char *kGap = "  ";

bool continuationByte(char c)
{
	return (static_cast<unsigned char>(c) & 0xc0) == 0x80;
}

} // namespace

std::size_t displayWidth(const std::string &text)
{
	return std::count_if(text.begin(), text.end(), [](char c) { return !continuationByte(c); });
}

std::string clip(const std::string &text, std::size_t width)
{
	if (displayWidth(text) <= width)
		return text;
	if (width == 0)
		return {};
	std::string out;
	std::size_t columns = 0;
	for (char c : text) {
		if (!continuationByte(c) && ++columns > width - 1)
			break;
		out += c;
	}
	return out + "…";
}

TextTable::TextTable(std::vector<std::string> header)
	: header_(std::move(header)), right_(header_.size(), false)
{
}

void TextTable::alignRight(std::size_t column)
{
	if (column < right_.size())
		right_[column] = true;
}

void TextTable::addRow(std::vector<std::string> cells)
{
	cells.resize(header_.size());
	// Cells are mostly made by text() already; any other (a name from a log file) is made inert here.
	for (std::string &cell : cells)
		cell = shownText(cell);
	rows_.push_back(std::move(cells));
}

std::string TextTable::render() const
{
	std::vector<std::size_t> widths(header_.size());
	for (std::size_t c = 0; c < header_.size(); ++c) {
		widths[c] = displayWidth(header_[c]);
		for (const auto &row : rows_)
			widths[c] = std::max(widths[c], displayWidth(row[c]));
	}
	std::string out;
	auto line = [&](const std::vector<std::string> &cells) {
		std::string text;
		for (std::size_t c = 0; c < cells.size(); ++c) {
			std::string pad(widths[c] - displayWidth(cells[c]), ' ');
			if (c > 0)
				text += kGap;
			text += right_[c] ? pad + cells[c] : cells[c] + pad;
		}
		text.erase(text.find_last_not_of(' ') + 1);
		out += text + '\n';
	};
	line(header_);
	for (const auto &row : rows_)
		line(row);
	return out;
}

} // namespace malleo::cli
