// SPDX-License-Identifier: Apache-2.0
// The large buffers of a malleable process, in memory its peers on the host can map. One memfd per process,
// reserved once as large as the machine's memory (nothing is committed before it is touched) and mapped by the
// process; a peer maps it on its first direct transfer with the process and keeps the mapping. A copy between two
// processes is then a memcpy through that mapping, where process_vm_readv pins and copies page by page at about a
// third of memcpy's speed on cached data (docs/performance.md, "A heap the peers map"). Freed blocks keep their
// pages, up to as many bytes as are in use, so that the next reconfiguration's new buffer needs no first touch,
// neither here nor in the peers' mappings; a process whose blocks are all freed (one that leaves) gives every page
// back.
//
// MALLEO_PCM_SHARED_HEAP=off turns it off: allocate() then returns null and the callers use malloc as before.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace malleo::pcm {

// The used and free ranges of a heap, as offsets, without any memory behind them: which block to hand out and which
// free pages to give back (pure logic). Every length is a multiple of the page size the caller uses.
class PageRanges
{
public:
	static constexpr std::size_t npos = ~std::size_t{0};

	explicit PageRanges(std::size_t bytes);

	// The offset of a new block of `bytes` (first fit, lowest offset), or npos when no free run is that long.
	std::size_t allocate(std::size_t bytes);
	// Frees the block at `offset`; its pages count as holding memory. Returns its length (0: no such block).
	std::size_t release(std::size_t offset);
	// Frees the end of the block at `offset` beyond its first `bytes`. False when there is no such block or it is
	// not longer than `bytes`.
	bool shrink(std::size_t offset, std::size_t bytes);
	// The free ranges (offset, length) whose pages to give back so that free pages holding memory are no more
	// than the bytes in use, highest first; they count as empty from now on.
	std::vector<std::pair<std::size_t, std::size_t>> trim();

	std::size_t inUse() const { return in_use_; }
	std::size_t residentFree() const { return resident_free_; }  // free bytes whose pages hold memory

private:
	struct Free {
		std::size_t length;
		bool resident;
	};
	void addFree(std::size_t offset, std::size_t length, bool resident);
	void takeFree(std::size_t offset, std::size_t length);

	std::map<std::size_t, Free> free_;         // by offset; neighbours of the same kind are merged
	std::map<std::size_t, std::size_t> used_;  // offset -> length
	std::size_t in_use_ = 0;
	std::size_t resident_free_ = 0;
};

// What a peer needs to map a process's heap: the memfd's descriptor number in that process and its inode (so that
// a reused pid or descriptor is not mistaken for it), and where the process maps it. All zero when it has none.
struct SharedHeapAdvert {
	std::int64_t fd = 0;
	std::int64_t inode = 0;
	std::int64_t base = 0;
	std::int64_t bytes = 0;
};

namespace shared_heap {

// A page-aligned block of at least `bytes` from this process's heap (made on first use), its contents whatever
// they were; null when the heap is off, could not be made, or has no run that long: the caller then uses malloc.
void* allocate(std::size_t bytes);
// Frees a block allocate() returned and returns true; false, touching nothing, for any other pointer.
bool release(void* block);
// Keeps the first `bytes` of a block allocate() returned and frees the rest of its pages; false for any other
// pointer or a larger size.
bool shrink(void* block, std::size_t bytes);
// Whether [address, address + bytes) lies in this process's heap.
bool contains(const void* address, std::size_t bytes);
SharedHeapAdvert advert();

// Where the heap of process `pid` that `advert` describes is mapped in this one: mapped on first use and kept, null
// when it cannot be (no heap, not allowed to open it, not that file any more).
char* mapPeer(pid_t pid, const SharedHeapAdvert& advert);
// Unmaps the peers' heaps but those of `pids` (the mapping would otherwise keep a departed peer's pages alive).
void keepPeers(const std::vector<pid_t>& pids);

}  // namespace shared_heap

}  // namespace malleo::pcm
