// SPDX-License-Identifier: Apache-2.0
// What joiners must learn before data reaches them: the buffers (name, distribution, element type, halo) and the
// replicated values; and a migration source's store. Flat little-endian bytes, sent within one run of one
// program, so no versioning is needed.
#pragma once

#include <vector>

#include "reconfiguration/buffers.h"

namespace malleo::pcm {

std::vector<unsigned char> encodeManifest(const std::vector<BufferMove> &moves, const Store &replicated);
// Returns false when the bytes are malformed.
bool decodeManifest(const std::vector<unsigned char> &bytes, std::vector<BufferSpec> &specs, Store &replicated);

std::vector<unsigned char> encodeStore(const Store &store);
bool decodeStore(const std::vector<unsigned char> &bytes, Store &store);

} // namespace malleo::pcm
