// SPDX-License-Identifier: Apache-2.0
// Wire encoding of messages: a fixed binary header checked before any parsing,
// then a MessagePack (or JSON text) body.
#include <malleo/message.h>

#include <fmt/format.h>

namespace malleo {

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

	// Parse without exceptions: a malformed body yields a discarded value.
	if (header[2] & kWireFlagJson)
		out = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
	else
		out = nlohmann::json::from_msgpack(body.begin(), body.end(), true, false);
	if (out.is_discarded())
		return Rejection{"undecodable", "body is not valid MessagePack or JSON"};
	return std::nullopt;
}

Message makeMessage(std::string_view type, std::string_view from, uint64_t id)
{
	return Message{{"v", kSchemaVersion}, {"type", type}, {"from", from}, {"id", id}};
}

} // namespace malleo
