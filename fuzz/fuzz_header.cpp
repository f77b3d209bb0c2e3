// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the header frame. The input's first 8 bytes (or fewer) are the header, the rest the body; the
// decoder must refuse or accept without crashing, and whatever it accepts must survive validation.
#include <malleo/message.h>

#include <algorithm>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t headerSize = std::min(size, malleo::kWireHeaderSize);
	std::span<const uint8_t> header(data, headerSize);
	std::span<const uint8_t> body(data + headerSize, size - headerSize);
	malleo::Message message;
	if (!malleo::decodeMessage(header, body, malleo::kDefaultMaxMessageBytes, message))
		for (malleo::Channel c : {malleo::Channel::Peer, malleo::Channel::Local, malleo::Channel::Remote})
			(void)malleo::validateMessage(message, c);
	return 0;
}
