// SPDX-License-Identifier: Apache-2.0
// Text that came from elsewhere (a peer, a client, a log file), made inert before a terminal or a log shows it.
#include <cstdint>

#include <fmt/format.h>

#include <malleo/message.h>

namespace malleo {

namespace {

// The length of the valid UTF-8 sequence at text[i] and its code point, or 0 for a byte that starts none (a stray
// continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short by the end or by `max`).
std::size_t sequenceAt(std::string_view text, std::size_t i, std::size_t end, uint32_t &cp)
{
	const auto c = static_cast<unsigned char>(text[i]);
	const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
	if (n == 0 || i + n > end)
		return 0;
	cp = n == 1 ? c : c & (0x7f >> n);
	for (std::size_t k = 1; k < n; ++k) {
		const auto cc = static_cast<unsigned char>(text[i + k]);
		if ((cc & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (cc & 0x3f);
	}
	const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

// What a terminal may act on rather than show: C0 controls (ESC starts every escape sequence), DEL, C1 controls
// (U+009B is a CSI on its own for some terminals), and the invisible marks that reorder or hide what follows
// (bidirectional overrides and isolates, the line and paragraph separators).
bool acted(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

} // namespace

std::string printableText(std::string_view text, std::size_t max)
{
	const std::size_t end = std::min(text.size(), max);
	std::string out;
	out.reserve(end);
	for (std::size_t i = 0; i < end;) {
		uint32_t cp = 0;
		const std::size_t n = sequenceAt(text, i, end, cp);
		if (n > 0 && !acted(cp)) {
			out.append(text.substr(i, n));
			i += n;
			continue;
		}
		// Every byte of it shown as \xHH: what it was stays readable, nothing of it reaches the terminal.
		for (std::size_t k = 0; k < std::max<std::size_t>(n, 1); ++k)
			out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i + k]));
		i += std::max<std::size_t>(n, 1);
	}
	return out;
}

} // namespace malleo
