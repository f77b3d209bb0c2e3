// SPDX-License-Identifier: Apache-2.0
// Wire encoding of messages: a fixed binary header checked before any parsing,
// then a MessagePack (or JSON text) body.
#include <malleo/message.h>

#include <fmt/format.h>

namespace malleo {

namespace {

// The parsers recurse once per nesting level, so a small body nested deep enough
// overflows the stack (a 60,000-deep MessagePack array fits in 64 KiB). These scans
// find the depth without recursion before any parsing; a malformed body passes them
// and is left to the parser to refuse.
bool msgpackWithinDepth(std::span<const uint8_t> body, std::size_t maxDepth)
{
	auto bigEndian = [&](std::size_t at, int bytes) -> uint64_t {
		uint64_t v = 0;
		for (int i = 0; i < bytes && at + i < body.size(); ++i)
			v = (v << 8) | body[at + i];
		return v;
	};
	std::vector<uint64_t> left{1}; // items still to read in each open container
	std::size_t pos = 0;
	while (true) {
		while (!left.empty() && left.back() == 0)
			left.pop_back();
		if (left.empty() || pos >= body.size())
			return true;
		--left.back();
		const uint8_t b = body[pos++];
		uint64_t children = 0;
		uint64_t skip = 0;
		if (b >= 0x80 && b <= 0x8f)
			children = 2u * (b & 0x0f);
		else if (b >= 0x90 && b <= 0x9f)
			children = b & 0x0f;
		else if (b >= 0xa0 && b <= 0xbf)
			skip = b & 0x1f;
		else if (b == 0xc4 || b == 0xd9)
			skip = 1 + bigEndian(pos, 1);
		else if (b == 0xc5 || b == 0xda)
			skip = 2 + bigEndian(pos, 2);
		else if (b == 0xc6 || b == 0xdb)
			skip = 4 + bigEndian(pos, 4);
		else if (b == 0xc7)
			skip = 2 + bigEndian(pos, 1);
		else if (b == 0xc8)
			skip = 3 + bigEndian(pos, 2);
		else if (b == 0xc9)
			skip = 5 + bigEndian(pos, 4);
		else if (b == 0xca || b == 0xce || b == 0xd2)
			skip = 4;
		else if (b == 0xcb || b == 0xcf || b == 0xd3)
			skip = 8;
		else if (b == 0xcc || b == 0xd0)
			skip = 1;
		else if (b == 0xcd || b == 0xd1)
			skip = 2;
		else if (b >= 0xd4 && b <= 0xd8)
			skip = 1 + (uint64_t{1} << (b - 0xd4));
		else if (b == 0xdc)
			skip = 2, children = bigEndian(pos, 2);
		else if (b == 0xdd)
			skip = 4, children = bigEndian(pos, 4);
		else if (b == 0xde)
			skip = 2, children = 2 * bigEndian(pos, 2);
		else if (b == 0xdf)
			skip = 4, children = 2 * bigEndian(pos, 4);
		if (skip > body.size() - pos)
			return true;
		pos += skip;
		if (children > 0) {
			if (left.size() > maxDepth)
				return false;
			left.push_back(children);
		}
	}
}

bool jsonWithinDepth(std::span<const uint8_t> body, std::size_t maxDepth)
{
	std::size_t depth = 0;
	bool inString = false;
	for (std::size_t i = 0; i < body.size(); ++i) {
		const uint8_t c = body[i];
		if (inString) {
			if (c == '\\')
				++i;
			else if (c == '"')
				inString = false;
		} else if (c == '"') {
			inString = true;
		} else if (c == '[' || c == '{') {
			if (++depth > maxDepth)
				return false;
		} else if ((c == ']' || c == '}') && depth > 0) {
			--depth;
		}
	}
	return true;
}

bool validUtf8(const std::string &s)
{
	std::size_t i = 0;
	while (i < s.size()) {
		const auto c = static_cast<unsigned char>(s[i]);
		const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
		if (n == 0 || i + n > s.size())
			return false;
		uint32_t cp = n == 1 ? c : c & (0x7f >> n);
		for (std::size_t k = 1; k < n; ++k) {
			const auto cc = static_cast<unsigned char>(s[i + k]);
			if ((cc & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (cc & 0x3f);
		}
		const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
		if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

// MessagePack strings are bytes; every later use (logs, JSON text, the CLI's
// terminal) needs text. Recursion is bounded by the depth check.
bool allStringsUtf8(const Message &m)
{
	if (m.is_string())
		return validUtf8(m.get_ref<const std::string &>());
	if (m.is_object()) {
		for (auto it = m.begin(); it != m.end(); ++it)
			if (!validUtf8(it.key()) || !allStringsUtf8(it.value()))
				return false;
	} else if (m.is_array()) {
		for (const Message &v : m)
			if (!allStringsUtf8(v))
				return false;
	}
	return true;
}

} // namespace

WireFrames encodeMessage(const Message &message, uint32_t sequence, bool jsonText)
{
	WireFrames frames;
	uint8_t header[kWireHeaderSize];
	writeWireHeader(header, sequence, jsonText ? kWireFlagJson : 0);
	frames.header.assign(header, header + kWireHeaderSize);
	if (jsonText) {
		frames.body = message.dump();
	} else {
		std::vector<uint8_t> packed = nlohmann::json::to_msgpack(message);
		frames.body.assign(packed.begin(), packed.end());
	}
	return frames;
}

std::optional<Rejection> decodeMessage(std::span<const uint8_t> header,
				       std::span<const uint8_t> body,
				       std::size_t maxBytes, Message &out)
{
	if (header.size() != kWireHeaderSize)
		return Rejection{"bad_header",
				 fmt::format("header has {} bytes, expected {}", header.size(),
					     kWireHeaderSize)};
	if (header[0] != kWireMagic)
		return Rejection{"bad_header", fmt::format("bad magic 0x{:02x}", header[0])};
	if (header[1] != kWireVersion)
		return Rejection{"newer_version",
				 fmt::format("envelope version {} is not ours ({})", header[1],
					     kWireVersion)};
	if (body.size() > maxBytes)
		return Rejection{"oversized",
				 fmt::format("body of {} bytes exceeds the limit of {}", body.size(),
					     maxBytes)};

	const bool json = header[2] & kWireFlagJson;
	if (!(json ? jsonWithinDepth(body, kMaxMessageDepth) : msgpackWithinDepth(body, kMaxMessageDepth)))
		return Rejection{"too_deep",
				 fmt::format("body nests deeper than {} levels", kMaxMessageDepth)};

	// Parse without exceptions: a malformed body yields a discarded value.
	if (json)
		out = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
	else
		out = nlohmann::json::from_msgpack(body.begin(), body.end(), true, false);
	if (out.is_discarded())
		return Rejection{"undecodable", "body is not valid MessagePack or JSON"};
	if (!json && !allStringsUtf8(out))
		return Rejection{"undecodable", "a string is not valid UTF-8"};
	return std::nullopt;
}

Message makeMessage(std::string_view type, std::string_view from, uint64_t id)
{
	return Message{{"v", kSchemaVersion}, {"type", type}, {"from", from}, {"id", id}};
}

} // namespace malleo
