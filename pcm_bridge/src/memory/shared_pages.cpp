// SPDX-License-Identifier: Apache-2.0
#include "memory/shared_pages.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace malleo::pcm {

namespace {

struct FileKey {
	std::int64_t device = 0, inode = 0;
	auto operator<=>(const FileKey&) const = default;
};

// A descriptor of a file some block maps, kept while pieces of it are mapped (owned or taken, pending).
struct File {
	int fd = -1;
	int pieces = 0;
};

// A piece of a block that the block owns: [start, start + length) from its base maps the file at `fileOffset`.
struct Extent {
	std::size_t start = 0, length = 0;
	FileKey file;
	std::int64_t fileOffset = 0;
};

// A block's mapping: whole pages from `base`; the block its caller sees starts `lead` bytes in. Its own file is
// open while it lives (the block counts as a piece of it) and grows where pages of the block are given fresh space.
struct Block {
	std::size_t bytes = 0;
	std::size_t lead = 0;
	std::vector<Extent> extents;  // in address order; a taken piece is added once kept, a given one then removed
	FileKey own;
	std::int64_t own_size = 0;
};

std::mutex gMutex;
std::map<FileKey, File> gFiles;
std::map<std::uintptr_t, Block> gBlocks;  // by the mapping's base

std::size_t pageSize()
{
	static const auto size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
	return size;
}

// The block holding [at, at + bytes), or null.
std::pair<const std::uintptr_t, Block>* findBlock(const void* at, std::size_t bytes)
{
	const auto address = reinterpret_cast<std::uintptr_t>(at);
	auto found = gBlocks.upper_bound(address);
	if (found == gBlocks.begin())
		return nullptr;
	--found;
	if (address + bytes > found->first + found->second.bytes)
		return nullptr;
	return &*found;
}

void dropPiece(const FileKey& key)
{
	auto file = gFiles.find(key);
	if (file != gFiles.end() && --file->second.pieces <= 0) {
		close(file->second.fd);
		gFiles.erase(file);
	}
}

void punch(const Extent& extent)
{
	// Pages another process took from this file are not in any extent here, so they survive.
	const auto file = gFiles.find(extent.file);
	if (file != gFiles.end())
		fallocate(file->second.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, extent.fileOffset,
			  static_cast<off_t>(extent.length));
}

// The block whose caller-visible start is `block`, or gBlocks.end().
std::map<std::uintptr_t, Block>::iterator blockStarting(const void* block)
{
	const auto address = reinterpret_cast<std::uintptr_t>(block);
	const auto found = gBlocks.find(address - address % pageSize());
	if (!block || found == gBlocks.end() || found->first + found->second.lead != address)
		return gBlocks.end();
	return found;
}

// Takes [start, end) out of a block's extents, cutting those it crosses, and returns what it took.
std::vector<Extent> cut(Block& block, std::size_t start, std::size_t end)
{
	std::vector<Extent> kept, removed;
	for (const Extent& extent : block.extents) {
		const std::size_t e_end = extent.start + extent.length;
		if (e_end <= start || extent.start >= end) {
			kept.push_back(extent);
			continue;
		}
		// The part taken out carries the extent's count of its file; a part kept on either side adds one.
		if (extent.start < start) {
			kept.push_back({extent.start, start - extent.start, extent.file, extent.fileOffset});
			++gFiles[extent.file].pieces;
		}
		const std::size_t from = std::max(extent.start, start), to = std::min(e_end, end);
		removed.push_back({from, to - from, extent.file,
				   extent.fileOffset + static_cast<std::int64_t>(from - extent.start)});
		if (e_end > end) {
			kept.push_back({end, e_end - end, extent.file,
					extent.fileOffset + static_cast<std::int64_t>(end - extent.start)});
			++gFiles[extent.file].pieces;
		}
	}
	block.extents = std::move(kept);
	return removed;
}

void insertExtent(Block& block, const Extent& extent)
{
	block.extents.insert(std::upper_bound(block.extents.begin(), block.extents.end(), extent,
					      [](const Extent& a, const Extent& b) { return a.start < b.start; }),
			     extent);
}

// Joins neighbouring extents that continue each other in one file, so that a block whose pieces come back
// together stays short to describe.
void coalesce(Block& block)
{
	std::vector<Extent> joined;
	for (const Extent& extent : block.extents) {
		if (!joined.empty()) {
			Extent& last = joined.back();
			if (last.start + last.length == extent.start && last.file == extent.file &&
			    last.fileOffset + static_cast<std::int64_t>(last.length) == extent.fileOffset) {
				last.length += extent.length;
				dropPiece(extent.file);
				continue;
			}
		}
		joined.push_back(extent);
	}
	block.extents = std::move(joined);
}

// Maps [start, start + length) of a block (whole pages) to fresh space at the end of its own file, in place of
// pages that are another block's: they read as zeros and are the block's alone. Where that fails, private memory
// at least ends the sharing (and the range is not the block's to offer).
void refill(std::uintptr_t base, Block& block, std::size_t start, std::size_t length)
{
	void* at = reinterpret_cast<void*>(base + start);
	const int fd = gFiles[block.own].fd;
	if (ftruncate(fd, block.own_size + static_cast<off_t>(length)) == 0 &&
	    mmap(at, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, block.own_size) != MAP_FAILED) {
		insertExtent(block, {start, length, block.own, block.own_size});
		++gFiles[block.own].pieces;
		block.own_size += static_cast<std::int64_t>(length);
		return;
	}
	mmap(at, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

// Opens process `pid`'s file of `piece` unless it is open here already; false if it cannot be opened or is not
// the file named (the descriptor was closed and its number reused).
bool openFile(pid_t pid, const FilePiece& piece)
{
	const FileKey key{piece.device, piece.inode};
	if (gFiles.count(key))
		return true;
	const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(piece.fd);
	const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat status{};
	if (fstat(fd, &status) != 0 || static_cast<std::int64_t>(status.st_dev) != key.device ||
	    static_cast<std::int64_t>(status.st_ino) != key.inode) {
		close(fd);
		return false;
	}
	gFiles[key] = {fd, 0};
	return true;
}

// Files opened for a redistribution that no piece uses.
void closeUnused()
{
	for (auto file = gFiles.begin(); file != gFiles.end();) {
		if (file->second.pieces <= 0) {
			close(file->second.fd);
			file = gFiles.erase(file);
		} else {
			++file;
		}
	}
}

} // namespace

bool sharedPagesWork()
{
	static const bool works = [] {
		const int fd = memfd_create("malleo-try", MFD_CLOEXEC);
		if (fd < 0)
			return false;
		close(fd);
		return true;
	}();
	return works;
}

void* allocateShared(std::size_t bytes, std::size_t lead)
{
	lead %= pageSize();
	bytes = (lead + bytes + pageSize() - 1) / pageSize() * pageSize();
	if (bytes == 0 || !sharedPagesWork())
		return nullptr;
	const int fd = memfd_create("malleo-block", MFD_CLOEXEC);
	if (fd < 0)
		return nullptr;
	struct stat status{};
	void* base = MAP_FAILED;
	if (ftruncate(fd, static_cast<off_t>(bytes)) == 0 && fstat(fd, &status) == 0)
		base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		close(fd);
		return nullptr;
	}
	const FileKey key{static_cast<std::int64_t>(status.st_dev), static_cast<std::int64_t>(status.st_ino)};
	std::lock_guard lock(gMutex);
	gFiles[key] = {fd, 2};  // its one extent, and the block itself
	gBlocks[reinterpret_cast<std::uintptr_t>(base)] = {bytes, lead, {{0, bytes, key, 0}}, key,
							   static_cast<std::int64_t>(bytes)};
	return static_cast<char*>(base) + lead;
}

bool releaseShared(void* block)
{
	std::lock_guard lock(gMutex);
	const auto found = blockStarting(block);
	if (found == gBlocks.end())
		return false;
	void* base = reinterpret_cast<void*>(found->first);
	for (const Extent& extent : found->second.extents) {
		punch(extent);
		dropPiece(extent.file);
	}
	dropPiece(found->second.own);
	munmap(base, found->second.bytes);
	gBlocks.erase(found);
	return true;
}

bool insideShared(const void* at, std::size_t bytes)
{
	std::lock_guard lock(gMutex);
	return at && findBlock(at, bytes);
}

std::size_t sharedBytes(const void* block)
{
	std::lock_guard lock(gMutex);
	const auto found = blockStarting(block);
	return found == gBlocks.end() ? 0 : found->second.bytes - found->second.lead;
}

std::size_t sharedLead(std::int64_t first, std::int64_t halo, std::int64_t element_bytes)
{
	const auto page = static_cast<std::int64_t>(pageSize());
	return static_cast<std::size_t>(((first - halo) * element_bytes % page + page) % page);
}

std::size_t moveShared(void* to, void* from, std::size_t bytes)
{
	const auto source = reinterpret_cast<std::uintptr_t>(from), target = reinterpret_cast<std::uintptr_t>(to);
	const std::size_t first = (pageSize() - source % pageSize()) % pageSize();  // to the first whole page
	const std::size_t last = (source + bytes) / pageSize() * pageSize() - source;
	std::vector<FilePiece> pieces;
	if (source % pageSize() == target % pageSize() && first < last && insideShared(to, bytes) &&
	    describeShared(static_cast<char*>(from) + first, last - first, SIZE_MAX, pieces)) {
		TakenPages taken;
		bool all = true;
		for (const FilePiece& piece : pieces) {
			FilePiece whole = piece;
			whole.offset = 0;
			all = all && taken.take(static_cast<char*>(to) + first + piece.offset, getpid(), whole) == 0;
		}
		if (all) {
			taken.giveAway(static_cast<char*>(from) + first, last - first);
			taken.keep();
			std::memcpy(to, from, first);
			std::memcpy(static_cast<char*>(to) + last, static_cast<char*>(from) + last, bytes - last);
			return last - first;
		}
		// Not kept: `to` maps fresh pages of its own where it took some, and everything is copied below.
	}
	std::memcpy(to, from, bytes);
	return 0;
}

bool describeShared(const void* at, std::size_t bytes, std::size_t most, std::vector<FilePiece>& pieces)
{
	pieces.clear();
	const auto address = reinterpret_cast<std::uintptr_t>(at);
	if (!at || bytes == 0)
		return false;
	std::lock_guard lock(gMutex);
	const auto* block = findBlock(at, bytes);
	if (!block)
		return false;
	// The whole pages around the range, offsets from `at`.
	const std::size_t from = address - block->first;
	const std::size_t start = from - from % pageSize();
	const std::size_t end = (from + bytes + pageSize() - 1) / pageSize() * pageSize();
	std::size_t covered = start;
	for (const Extent& extent : block->second.extents) {
		const std::size_t e_end = extent.start + extent.length;
		if (e_end <= covered || extent.start >= end)
			continue;
		if (extent.start > covered || pieces.size() == most)
			return false;  // a gap: pages taken in this very redistribution, or private memory (refill)
		const std::size_t to = std::min(e_end, end);
		pieces.push_back({static_cast<std::int64_t>(covered) - static_cast<std::int64_t>(from),
				  static_cast<std::int64_t>(to - covered),
				  gFiles[extent.file].fd,
				  extent.fileOffset + static_cast<std::int64_t>(covered - extent.start),
				  extent.file.device, extent.file.inode});
		covered = to;
	}
	return covered == end;
}

TakenPages::~TakenPages()
{
	abandon();
}

void TakenPages::abandon()
{
	if (kept_)
		return;
	std::lock_guard lock(gMutex);
	for (const Taken& taken : taken_) {
		const auto length = static_cast<std::size_t>(taken.length);
		if (auto* block = findBlock(reinterpret_cast<const void*>(taken.at), length))
			refill(block->first, block->second, taken.at - block->first, length);
		dropPiece({taken.device, taken.inode});
	}
	taken_.clear();
	given_.clear();
	takenBytes_ = 0;
	closeUnused();
}

bool TakenPages::canOpen(pid_t pid, const FilePiece& piece)
{
	std::lock_guard lock(gMutex);
	return openFile(pid, piece);
}

int TakenPages::take(void* at, pid_t pid, const FilePiece& piece)
{
	std::lock_guard lock(gMutex);
	const FileKey key{piece.device, piece.inode};
	const auto length = static_cast<std::size_t>(piece.length);
	auto* block = findBlock(at, length);
	if (!block || !openFile(pid, piece))
		return EBADF;
	const bool mapped = mmap(at, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE,
				 gFiles[key].fd, piece.fileOffset) != MAP_FAILED;
	const int error = errno;
	// What the block held there is never read again (the redistribution fails if the mapping did).
	const std::size_t start = reinterpret_cast<std::uintptr_t>(at) - block->first;
	for (const Extent& replaced : cut(block->second, start, start + length)) {
		punch(replaced);
		dropPiece(replaced.file);
	}
	if (!mapped) {
		refill(block->first, block->second, start, length);  // MAP_FIXED may have unmapped the range
		return error;
	}
	++gFiles[key].pieces;
	taken_.push_back({reinterpret_cast<std::uintptr_t>(at), piece.length, piece.fileOffset, key.device,
			  key.inode});
	takenBytes_ += piece.length;
	return 0;
}

void TakenPages::giveAway(const void* at, std::size_t bytes)
{
	given_.emplace_back(reinterpret_cast<std::uintptr_t>(at), bytes);
}

void TakenPages::keep()
{
	std::lock_guard lock(gMutex);
	for (const auto& [at, bytes] : given_) {
		auto* block = findBlock(reinterpret_cast<const void*>(at), bytes);
		if (!block)
			continue;
		for (const Extent& given : cut(block->second, at - block->first, at - block->first + bytes))
			dropPiece(given.file);
		// A block that stays (kept in place) must not go on mapping them.
		refill(block->first, block->second, at - block->first, bytes);
	}
	for (const Taken& taken : taken_) {
		auto* block = findBlock(reinterpret_cast<const void*>(taken.at), static_cast<std::size_t>(taken.length));
		if (!block) {
			dropPiece({taken.device, taken.inode});
			continue;
		}
		insertExtent(block->second, {taken.at - block->first, static_cast<std::size_t>(taken.length),
					     {taken.device, taken.inode}, taken.fileOffset});
		coalesce(block->second);
	}
	closeUnused();
	kept_ = true;
}

}  // namespace malleo::pcm
