// SPDX-License-Identifier: Apache-2.0
// Moving memory by its pages instead of its bytes. mremap hands the physical pages of a range to another address,
// so a large local copy costs page-table updates instead of a copy, and the destination's pages need no first touch
// (on the test VM a first touch of fresh memory runs at 3.5 GB/s at best, a sixth of memcpy). A reconfiguration
// uses it, once every process knows the data moved, for the elements a process keeps when its old buffer is
// discarded afterwards (docs/pcm-api.md, "Data a process keeps").
#pragma once

#include <cstddef>
#include <cstdint>

namespace malleo::pcm {

// Below this many bytes a copy costs about what the mapping checks do.
constexpr std::size_t kPageMoveMin = std::size_t{1} << 20;

// Whether mremap moves pages as the kernel does, tried once on two pages of this process. It does not where
// something hooks it badly: UCX's memory hooks (Debian's MPICH uses UCX) pass mremap on without its fifth argument,
// so the pages go to an address nobody asked for and the source loses them. Then nothing is moved, only copied.
bool pageMovesWork();

// Copies `bytes` from `from` to `to` (the two do not overlap). When the whole pages of both lie in private anonymous
// read-write mappings, at the same offset within a page, and the range holds at least kPageMoveMin bytes, the runs of
// kPageMoveMin or more of its whole pages whose destination pages are not in memory yet (mincore) are moved instead
// (mremap with MREMAP_DONTUNMAP: `from` stays mapped and those pages of it read as zeros afterwards); the rest, and
// the partial pages at the ends, are copied: a destination written before is copied into. Any failure falls back to
// copying, so the bytes always arrive (and pageMovesWork() is asked first). Returns the bytes moved as pages (0: all
// copied).
std::size_t moveOrCopy(void* to, void* from, std::size_t bytes);

// Faults in the whole pages inside [at, at + bytes) with one madvise(MADV_POPULATE_WRITE), so that writes to them
// later find them there. The contents do not change; without MADV_POPULATE_WRITE (Linux < 5.14) or on any error the
// pages simply fault when first written. Pages at the ends that the range only partly covers are left alone.
void populatePages(void* at, std::size_t bytes);

// Whether the first whole page inside [at, at + bytes) is in memory (mincore): one system call that tells a buffer
// written before from fresh memory. False when the range holds no whole page or on any error.
bool firstPageResident(void* at, std::size_t bytes);

// Lets the kernel take back the whole pages inside [at, at + bytes) when it needs memory (MADV_FREE): until then
// they stay mapped and a write to them costs no fault. Their contents are undefined from now on.
void freePagesLazily(void* at, std::size_t bytes);

// Where allocateBlock puts a block of kPageMoveMin bytes or more.
enum class Placement {
	// On a page, so that the elements a process keeps sit at the same offset in a page in its old and new blocks
	// and can move by pages (the C++ API, whose reconfigurator allocates both).
	Page,
	// On a 2 MiB boundary, advised MADV_HUGEPAGE before its first touch (MALLEO_PCM_HUGE_PAGES=on).
	HugePage,
	// Where malloc puts a block of its size, so that its pages can move into a buffer the program mallocs for
	// them (the C API's PCM_Load). glibc's malloc and calloc give a block above their mmap threshold (at most 32
	// MiB) a mapping of its own and start it 16 bytes into its first page; below it, both take blocks from the heap
	// at offsets of their own, and a move falls back to a copy.
	LikeMalloc,
};

// A buffer of `count` elements of `element_bytes` with `halo` more on each side and one byte after them, to free with
// std::free, placed as `placement` says from kPageMoveMin bytes on; then only the halos and the last byte are zeroed
// unless `zero_elements` (a redistribution writes every element, and its pages are left untouched for it). Null
// when memory is short.
void* allocateBlock(std::int64_t count, std::int64_t halo, std::int64_t element_bytes, bool zero_elements,
		    Placement placement);

}  // namespace malleo::pcm
