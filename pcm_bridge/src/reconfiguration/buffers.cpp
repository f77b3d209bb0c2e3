// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/buffers.h"

#include <cstdlib>
#include <numeric>

#include "memory/page_move.h"
#include "memory/shared_pages.h"

namespace malleo::pcm {

namespace {

bool gHugePages = false;  // MALLEO_PCM_HUGE_PAGES=on (configureBlocks)
bool gForMallocedBuffers = false;  // allocateForMallocedBuffers
bool gSharedPages = false;  // unless MALLEO_PCM_SHARED_PAGES=off (configureBlocks)

} // namespace

MPI_Datatype mpiType(BaseType type)
{
	switch (type) {
	case BaseType::Int32:
		return MPI_INT32_T;
	case BaseType::Int64:
		return MPI_INT64_T;
	case BaseType::Float32:
		return MPI_FLOAT;
	case BaseType::Float64:
		return MPI_DOUBLE;
	case BaseType::Byte:
		break;
	}
	return MPI_BYTE;
}

std::size_t baseSize(BaseType type)
{
	switch (type) {
	case BaseType::Int32:
	case BaseType::Float32:
		return 4;
	case BaseType::Int64:
	case BaseType::Float64:
		return 8;
	case BaseType::Byte:
		break;
	}
	return 1;
}

std::int64_t BufferMove::elementBytes() const
{
	return spec.elementLength * static_cast<std::int64_t>(baseSize(spec.base));
}

void *BufferMove::pastHalo(void *block) const
{
	return block ? static_cast<unsigned char *>(block) + spec.halo * elementBytes() : nullptr;
}

void configureBlocks(bool huge_pages, bool shared_pages)
{
	gHugePages = huge_pages;
	gSharedPages = shared_pages;
}

bool sharesPages()
{
	return gSharedPages;
}

std::int64_t firstElement(Distribution distribution, const std::vector<std::int64_t> &counts, int slot)
{
	if (distribution != Distribution::Block1d)
		return 0;
	return std::accumulate(counts.begin(), counts.begin() + slot, std::int64_t{0});
}

void *allocateElements(std::int64_t count, std::int64_t halo, std::int64_t element_bytes, bool zero_elements,
		       std::int64_t first)
{
	const auto bytes = static_cast<std::size_t>((count + 2 * halo) * element_bytes) + 1;
	if (sharesPages() && bytes > kPageMoveMin)
		if (void *shared = allocateShared(bytes, sharedLead(first, halo, element_bytes)))
			return shared;  // reads as zeros
	const Placement placement = gForMallocedBuffers ? Placement::LikeMalloc :
				    gHugePages          ? Placement::HugePage :
							  Placement::Page;
	return allocateBlock(count, halo, element_bytes, zero_elements, placement);
}

void releaseElements(void *block)
{
	if (!releaseShared(block))
		std::free(block);
}

void allocateForMallocedBuffers()
{
	gForMallocedBuffers = true;
}

} // namespace malleo::pcm
