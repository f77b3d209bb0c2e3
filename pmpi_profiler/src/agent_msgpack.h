// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

namespace malleo::pmpi {

// The few MessagePack forms the agent messages need, written into a fixed buffer: the preload
// library stays free of a JSON library and of allocation while encoding. Writes past the end set
// `overflow` and are dropped, so a caller checks once at the end.
struct MsgpackWriter {
	uint8_t *data;
	size_t capacity;
	size_t size = 0;
	bool overflow = false;

	void mapHeader(uint32_t entries);
	void arrayHeader(uint32_t items);
	void string(const char *text);
	void string(const char *text, size_t length);
	void unsignedInt(uint64_t value);
	void real(double value);
	void boolean(bool value);

private:
	void put(const void *bytes, size_t n);
	void putByte(uint8_t byte);
	void putBigEndian(uint64_t value, int bytes);
};

} // namespace malleo::pmpi
