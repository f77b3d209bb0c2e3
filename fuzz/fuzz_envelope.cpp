// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the body behind a valid header (bit 0 of the first byte picks MessagePack or JSON text) through
// decoding, the envelope's and the schema's checks. A message that passes keeps passing once its unknown fields are
// dropped, and encodes and decodes to itself.
#include <malleo/message.h>

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const bool json = data[0] & 1;
	uint8_t header[malleo::kWireHeaderSize];
	malleo::writeWireHeader(header, 1, json ? malleo::kWireFlagJson : 0);
	malleo::Message message;
	if (malleo::decodeMessage(header, std::span<const uint8_t>(data + 1, size - 1), malleo::kDefaultMaxMessageBytes,
				  message))
		return 0;
	for (malleo::Channel c : {malleo::Channel::Peer, malleo::Channel::Local}) {
		if (malleo::validateMessage(message, c))
			continue;
		const malleo::Message known = malleo::knownFields(message, c);
		if (malleo::validateMessage(known, c))
			std::abort(); // dropping unknown fields must not make a valid message invalid
		const malleo::WireFrames frames = malleo::encodeMessage(known, 2, json);
		malleo::Message again;
		if (malleo::decodeMessage(frames.header,
					  std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(frames.body.data()),
								   frames.body.size()),
					  16 << 20, again) ||
		    again != known)
			std::abort(); // what the agent sends on must read back the same
	}
	return 0;
}
