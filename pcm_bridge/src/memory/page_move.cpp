// SPDX-License-Identifier: Apache-2.0
#include "memory/page_move.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace malleo::pcm {

namespace {

struct Piece {
	std::uintptr_t start, end;
};

// /proc/self/maps as far as the first mapping that starts at or after `limit` (whole if none does). The kernel
// writes the file out line by line as it is read, about 1.3 µs a line, and an Open MPI process has some 280 lines
// (350 µs, against 100 µs for a memcpy of the 2.5 MiB a 10 MiB merge's survivor keeps). The lines come in address
// order and a reconfiguration's blocks are mapped late, at the low end of the mmap area, a dozen lines in, so
// reading stops there. Complete lines only.
std::string readMaps(std::uintptr_t limit)
{
	std::string text;
	const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return text;
	char chunk[4096];
	for (ssize_t got; (got = read(fd, chunk, sizeof chunk)) > 0;) {
		text.append(chunk, static_cast<std::size_t>(got));
		const std::size_t last = text.rfind('\n');
		if (last == std::string::npos || last == 0)
			continue;
		const std::size_t before = text.rfind('\n', last - 1);
		unsigned long start = 0;
		if (std::sscanf(text.c_str() + (before == std::string::npos ? 0 : before + 1), "%lx", &start) == 1 &&
		    start >= limit)
			break;
	}
	close(fd);
	text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
	return text;
}

// [first, end) cut where the mappings of this process that hold it begin and end, as `maps` (/proc/self/maps)
// says, if every one of them is private, anonymous and read-write and they leave no gap. Moving pages out of or
// into anything else (a file, shared memory, huge-page files, a stack) would change what that memory is. A mapping
// the kernel names counts only when it is the brk heap ("[heap]"), which malloc uses like any anonymous memory. A
// buffer often spans several mappings: pages moved into it earlier are a mapping of their own.
bool privateAnonymousPieces(const std::string& maps, std::uintptr_t first, std::uintptr_t end,
			    std::vector<Piece>& pieces)
{
	std::uintptr_t covered = first;
	bool fits = true;
	for (std::size_t at = 0; fits && covered < end && at < maps.size();) {
		std::size_t eol = maps.find('\n', at);
		if (eol == std::string::npos)
			eol = maps.size();
		const std::string line = maps.substr(at, eol - at);
		at = eol + 1;
		unsigned long start = 0, stop = 0, offset = 0, inode = 0;
		char perms[5] = {}, device[32] = {};
		int path_at = 0;
		if (std::sscanf(line.c_str(), "%lx-%lx %4s %lx %31s %lu %n", &start, &stop, perms, &offset, device,
				&inode, &path_at) < 6 ||
		    stop <= covered)
			continue;
		const char* path = line.c_str() + path_at;
		const bool anonymous = inode == 0 && (*path == '\0' || std::strncmp(path, "[heap]", 6) == 0);
		fits = start <= covered && anonymous && std::strncmp(perms, "rw-p", 4) == 0;
		if (fits) {
			pieces.push_back({covered, std::min<std::uintptr_t>(stop, end)});
			covered = pieces.back().end;
		}
	}
	return fits && covered == end;
}

// The whole pages inside [at, at + bytes), as [first, end); empty when there are none.
void wholePages(void* at, std::size_t bytes, std::uintptr_t& first, std::uintptr_t& end)
{
	const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
	const auto start = reinterpret_cast<std::uintptr_t>(at);
	first = (start + page - 1) / page * page;
	end = std::max(first, (start + bytes) / page * page);
}

// Moves the pages of [from, from + length) to `to` (both page-aligned, private anonymous), or copies them where the
// kernel refuses. Returns the bytes moved.
std::size_t moveRun(unsigned char* to, unsigned char* from, std::size_t length)
{
	if (mremap(from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to) == to)
		return length;
	// With MREMAP_FIXED the kernel unmaps the target range before it looks at the source, so the target is
	// mapped again (fresh zero pages: its old contents were about to be overwritten) and copied into.
	if (mmap(to, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != to) {
		std::fprintf(stderr, "libmalleo_pcm: a failed page move left a hole in a new buffer: %s\n",
			     std::strerror(errno));
		std::abort();
	}
	std::memcpy(to, from, length);
	return 0;
}

}  // namespace

bool pageMovesWork()
{
	static const bool works = [] {
		const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
		auto map = [page] {
			void* at = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			return at == MAP_FAILED ? nullptr : static_cast<unsigned char*>(at);
		};
		unsigned char* from = map();
		unsigned char* to = map();
		bool moved = false;
		if (from && to) {
			from[0] = 0x5a;
			void* at = mremap(from, page, page, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to);
			moved = at == to && to[0] == 0x5a && from[0] == 0;
			if (at != MAP_FAILED && at != to)
				munmap(at, page);  // wherever a broken hook put it
		}
		if (from)
			munmap(from, page);
		if (to)
			munmap(to, page);
		return moved;
	}();
	return works;
}

std::size_t moveOrCopy(void* to, void* from, std::size_t bytes)
{
	const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
	const auto source = reinterpret_cast<std::uintptr_t>(from);
	const auto destination = reinterpret_cast<std::uintptr_t>(to);
	std::uintptr_t first = 0, end = 0;
	wholePages(from, bytes, first, end);
	const std::uintptr_t target_first = destination + (first - source);
	const std::size_t pages = (end - first) / page, min_run = kPageMoveMin / page;
	// Pages moved onto pages already in memory would first be unmapped and freed: a TLB flush, and on a hypervisor
	// with shadow page tables a fault more for every page the process touches next, where a copy into them runs at
	// memcpy's speed. So only runs of fresh destination pages move, and only runs of kPageMoveMin or more, which
	// bounds the mappings a move leaves behind (the kernel allows some 65 000). Asked first: a destination written
	// before is copied into without a look at /proc/self/maps.
	std::vector<unsigned char> resident;
	bool movable = bytes >= kPageMoveMin && source % page == destination % page && end > first;
	if (movable) {
		resident.assign(pages, 1);  // if mincore fails, every page counts as in memory: copied
		mincore(reinterpret_cast<void*>(target_first), pages * page, resident.data());
		std::size_t fresh = 0;
		for (std::size_t k = 0; k < pages && fresh < min_run; ++k)
			fresh = (resident[k] & 1) ? 0 : fresh + 1;
		movable = fresh >= min_run && pageMovesWork();
	}
	std::vector<Piece> pieces, destination_pieces;
	const std::string maps = movable ? readMaps(std::max(end, target_first + (end - first))) : std::string();
	if (!movable || !privateAnonymousPieces(maps, first, end, pieces) ||
	    !privateAnonymousPieces(maps, target_first, target_first + (end - first), destination_pieces)) {
		std::memcpy(to, from, bytes);
		return 0;
	}
	std::size_t moved = 0;
	for (const Piece& piece : pieces) {
		const std::size_t last = (piece.end - first) / page;
		for (std::size_t run = (piece.start - first) / page; run < last;) {
			std::size_t next = run;
			while (next < last && (resident[next] & 1) == (resident[run] & 1))
				++next;
			auto* at = reinterpret_cast<unsigned char*>(first + run * page);
			auto* target = reinterpret_cast<unsigned char*>(target_first + run * page);
			const std::size_t length = (next - run) * page;
			if ((resident[run] & 1) || next - run < min_run)
				std::memcpy(target, at, length);
			else
				moved += moveRun(target, at, length);
			run = next;
		}
	}
	std::memcpy(to, from, first - source);
	std::memcpy(reinterpret_cast<void*>(destination + (end - source)), reinterpret_cast<void*>(end),
		    source + bytes - end);
	return moved;
}

void populatePages(void* at, std::size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
	std::uintptr_t first = 0, end = 0;
	wholePages(at, bytes, first, end);
	if (end > first)
		madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE);
#else
	(void)at, (void)bytes;
#endif
}

bool firstPageResident(void* at, std::size_t bytes)
{
	std::uintptr_t first = 0, end = 0;
	wholePages(at, bytes, first, end);
	unsigned char resident = 0;
	return end > first && mincore(reinterpret_cast<void*>(first), 1, &resident) == 0 && (resident & 1) != 0;
}

void freePagesLazily(void* at, std::size_t bytes)
{
	std::uintptr_t first = 0, end = 0;
	wholePages(at, bytes, first, end);
	if (end > first)
		madvise(reinterpret_cast<void*>(first), end - first, MADV_FREE);
}

void* allocateBlock(std::int64_t count, std::int64_t halo, std::int64_t element_bytes, bool zero_elements,
		    Placement placement)
{
	const auto bytes = static_cast<std::size_t>((count + 2 * halo) * element_bytes) + 1;
	if (bytes < kPageMoveMin)
		return std::calloc(bytes, 1);
	constexpr std::size_t kHugePage = std::size_t{2} << 20;
	const bool huge = placement == Placement::HugePage && bytes >= kHugePage;
	void* block = nullptr;
	if (placement == Placement::LikeMalloc)
		block = std::malloc(bytes);
	else if (posix_memalign(&block, huge ? kHugePage : static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), bytes) != 0)
		return nullptr;
	if (!block)
		return nullptr;
	auto* base = static_cast<unsigned char*>(block);
	// Before the first touch, so that the kernel backs the block with 2 MiB pages where it can (transparent huge
	// pages in madvise mode); the whole 2 MiB pages inside the block only.
	if (huge)
		madvise(base, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
	const auto halo_bytes = static_cast<std::size_t>(halo * element_bytes);
	if (zero_elements) {
		std::memset(base, 0, bytes);
	} else {
		std::memset(base, 0, halo_bytes);
		std::memset(base + bytes - 1 - halo_bytes, 0, halo_bytes + 1);
	}
	return block;
}

}  // namespace malleo::pcm
