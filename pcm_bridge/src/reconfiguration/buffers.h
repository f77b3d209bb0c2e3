// SPDX-License-Identifier: Apache-2.0
// The data an operation moves: distributed buffers (each process's side of one in a BufferMove), the blocks the
// bridge allocates for them, and named values (replicated ones go to joiners; a migration source's store goes to its
// replacement).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "redistribution/schedule.h"

namespace malleo::pcm {

enum class BaseType : std::int32_t { Int32 = 0, Int64 = 1, Float32 = 2, Float64 = 3, Byte = 4 };
MPI_Datatype mpiType(BaseType type);
std::size_t baseSize(BaseType type);

struct BufferSpec {
	std::string name;
	Distribution distribution = Distribution::Block1d;
	BaseType base = BaseType::Byte;
	std::int64_t elementLength = 1;   // base items per element (a heat2d column: its rows)
	std::int64_t halo = 0;            // elements kept before and after the local block (ghost columns)
};

// One process's side of a distributed buffer in a reconfiguration. Allocations include the halo.
struct BufferMove {
	BufferSpec spec;
	void *oldData = nullptr;
	std::int64_t oldCount = 0;
	void *newData = nullptr;  // in: a destination the caller provides, or null; out: where the data is
	std::int64_t newCount = 0;
	bool allocated = false;    // newData was allocated here (allocateElements): the caller frees it with releaseElements
	std::int64_t capacity = -1;  // elements a caller-provided newData holds (halo excluded); -1: enough
	// The caller keeps using oldData as the new buffer where it can (PCM_Split rewrites the columns in place):
	// a process whose new elements are exactly the first ones it holds, or those followed by elements from others
	// that fit in `oldCapacity`, gets newData = oldData, and nothing of its data is copied or allocated.
	bool inPlace = false;
	std::int64_t oldCapacity = -1;  // elements oldData has room for (halo excluded); -1: oldCount
	// The caller discards oldData after a success (a merge's old columns, the C++ API's old storage): the
	// elements this process keeps may move into newData by their pages (page_move.h) once the move succeeded.
	bool discardOld = false;
	std::int64_t elementBytes() const;
	// Where a block of this buffer's elements start, past its leading halo; null for null.
	void *pastHalo(void *block) const;
};

// Where the bridge puts the blocks it allocates, from the settings (Reconfigurator::configure): `huge_pages`, and
// whether blocks are shared (sharesPages()). Until then blocks are private, on a page.
void configureBlocks(bool huge_pages, bool shared_pages);

// A buffer of `count` elements of `element_bytes` with `halo` more on each side, to free with releaseElements: where
// sharesPages() and from kPageMoveMin bytes a shared block (shared_pages.h, zeroed) placed by the global index
// `first` of its first element, else allocateBlock (page_move.h), placed for allocateForMallocedBuffers if it was
// called, else with huge pages where MALLEO_PCM_HUGE_PAGES=on, else on a page.
void *allocateElements(std::int64_t count, std::int64_t halo, std::int64_t element_bytes, bool zero_elements,
		       std::int64_t first = 0);
void releaseElements(void *block);
// The global index a shared block of slot `slot` is placed by (allocateElements): for block1d the elements of the
// slots before it; for the others 0, which lines up the elements a process keeps at the start of its block (an
// independent buffer's) with their old places.
std::int64_t firstElement(Distribution distribution, const std::vector<std::int64_t> &counts, int slot);
// Unless MALLEO_PCM_SHARED_PAGES=off (or memfd_create fails): the bridge's blocks, and PCM_Alloc's, are shared
// blocks. Off until the settings are applied (MPI_Init).
bool sharesPages();

// The program takes what the bridge receives for it into buffers it mallocs itself (the PCM C API's PCM_Load): from
// now on the bridge places its blocks as malloc would (Placement::LikeMalloc), so that their pages can move there
// instead of being copied into fresh memory.
void allocateForMallocedBuffers();

// Named values.
struct Blob {
	BaseType type = BaseType::Byte;
	std::int64_t count = 0;
	std::vector<unsigned char> bytes;
};
using Store = std::map<std::string, Blob>;

} // namespace malleo::pcm
