// SPDX-License-Identifier: Apache-2.0
// A result is what the root agent records as the outcome of a reconfiguration and tells the agent that asked, the
// nodes involved and their decision modules: a coordinator's numbers set the application's size and its
// redistribution cost. Checked against the command it answers, so that a result cannot say what no operation of
// that command could have done (issue 46: 64 processes and a cost of 1e300 after a split of 2).
#include "result_check.h"

#include <cmath>

#include <fmt/format.h>

namespace malleo {

namespace {

// The coordinator measures from when it takes the command, after the agent handed it out: its clock and the
// network's delays may add a little.
constexpr double kDurationSlack = 1.0;

std::optional<int64_t> count(const Message &m, const char *key)
{
	const auto it = m.find(key);
	if (it == m.end() || !it->is_number_integer())
		return std::nullopt;
	return it->get<int64_t>();
}

std::optional<std::string> checkNumber(const Message &m, const char *key, double max)
{
	const auto it = m.find(key);
	if (it == m.end())
		return std::nullopt;
	const double v = it->get<double>();
	if (!std::isfinite(v) || v < 0)
		return fmt::format("'{}' is {}: not a finite number of at least 0", key, v);
	if (v > max)
		return fmt::format("'{}' is {:g}, more than {:g}", key, v, max);
	return std::nullopt;
}

} // namespace

std::optional<std::string> checkResult(const Message &result, const Command &command, double maxDuration)
{
	const bool ok = result["ok"].get<bool>();
	const std::optional<int64_t> before = count(result, "before"), after = count(result, "after");
	if ((before && *before == 0) || (after && *after == 0))
		return std::string("an application of 0 processes");
	if (before && after) {
		int64_t expected = *before;
		if (ok && command.op == Operation::Split)
			expected = *before + command.count;
		else if (ok && command.op == Operation::Merge)
			expected = *before - command.count;
		if (*after != expected)
			return fmt::format("{} {} of {}: {} -> {} processes, where {} -> {} was to be", ok ? "an ok" : "a failed",
					   operationName(command.op), command.count, *before, *after, *before, expected);
	}
	if (auto bad = checkNumber(result, "duration", maxDuration + kDurationSlack))
		return *bad + " (the seconds since the command was handed out)";
	if (auto bad = checkNumber(result, "bytes", kResultBytesMax))
		return bad;
	return std::nullopt;
}

std::string withoutControls(std::string_view text, std::size_t max)
{
	std::string out;
	for (std::size_t i = 0; i < text.size();) {
		const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
		const unsigned char c = byte(i);
		// One UTF-8 character: its length from the lead byte, then continuation bytes; anything else is dropped a
		// byte at a time (a lone 0x9B is CSI to an 8-bit terminal).
		const std::size_t length = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
					   : c >= 0xF0 && c <= 0xF4			    ? 4
											    : 0;
		bool valid = length > 0 && i + length <= text.size();
		for (std::size_t k = 1; valid && k < length; ++k)
			valid = (byte(i + k) & 0xC0) == 0x80;
		if (!valid) {
			++i;
			continue;
		}
		// C0, DEL and C1 (U+0080..U+009F, 0xC2 0x80..0x9F).
		const bool control = c < 0x20 || c == 0x7F || (c == 0xC2 && byte(i + 1) <= 0x9F);
		if (!control) {
			if (out.size() + length > max)
				break;
			out.append(text.substr(i, length));
		}
		i += length;
	}
	return out;
}

} // namespace malleo
