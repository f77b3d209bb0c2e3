// SPDX-License-Identifier: Apache-2.0
#include "shared_heap.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace malleo::pcm {

PageRanges::PageRanges(std::size_t bytes)
{
	if (bytes > 0)
		free_[0] = {bytes, false};
}

void PageRanges::addFree(std::size_t offset, std::size_t length, bool resident)
{
	if (length == 0)
		return;
	if (resident)
		resident_free_ += length;
	auto next = free_.lower_bound(offset);
	if (next != free_.end() && next->second.resident == resident && offset + length == next->first) {
		length += next->second.length;
		next = free_.erase(next);
	}
	if (next != free_.begin()) {
		auto previous = std::prev(next);
		if (previous->second.resident == resident && previous->first + previous->second.length == offset) {
			previous->second.length += length;
			return;
		}
	}
	free_.emplace_hint(next, offset, Free{length, resident});
}

// Removes [offset, offset + length), which lies in free ranges that touch one another.
void PageRanges::takeFree(std::size_t offset, std::size_t length)
{
	const std::size_t end = offset + length;
	std::vector<std::pair<std::size_t, Free>> leftovers;
	for (auto range = std::prev(free_.upper_bound(offset)); range != free_.end() && range->first < end;) {
		const std::size_t start = range->first, stop = start + range->second.length;
		const bool resident = range->second.resident;
		if (resident)
			resident_free_ -= range->second.length;
		if (start < offset)
			leftovers.push_back({start, {offset - start, resident}});
		if (stop > end)
			leftovers.push_back({end, {stop - end, resident}});
		range = free_.erase(range);
	}
	for (const auto& [start, piece] : leftovers)
		addFree(start, piece.length, piece.resident);
}

std::size_t PageRanges::allocate(std::size_t bytes)
{
	if (bytes == 0)
		return npos;
	// Runs of free ranges that touch one another, whatever their pages hold.
	std::size_t run_start = npos, run_length = 0;
	for (const auto& [offset, range] : free_) {
		if (run_start == npos || run_start + run_length != offset) {
			run_start = offset;
			run_length = 0;
		}
		run_length += range.length;
		if (run_length >= bytes) {
			takeFree(run_start, bytes);
			used_[run_start] = bytes;
			in_use_ += bytes;
			return run_start;
		}
	}
	return npos;
}

std::size_t PageRanges::release(std::size_t offset)
{
	auto block = used_.find(offset);
	if (block == used_.end())
		return 0;
	const std::size_t length = block->second;
	used_.erase(block);
	in_use_ -= length;
	addFree(offset, length, true);
	return length;
}

bool PageRanges::shrink(std::size_t offset, std::size_t bytes)
{
	auto block = used_.find(offset);
	if (block == used_.end() || block->second <= bytes || bytes == 0)
		return false;
	const std::size_t rest = block->second - bytes;
	block->second = bytes;
	in_use_ -= rest;
	addFree(offset + bytes, rest, true);
	return true;
}

std::vector<std::pair<std::size_t, std::size_t>> PageRanges::trim()
{
	std::vector<std::pair<std::size_t, std::size_t>> given_back;
	while (resident_free_ > in_use_) {
		auto highest = std::find_if(free_.rbegin(), free_.rend(), [](const auto& range) {
			return range.second.resident;
		});
		if (highest == free_.rend())
			break;
		const std::size_t offset = highest->first, length = highest->second.length;
		const std::size_t take = std::min(length, resident_free_ - in_use_);
		const std::size_t start = offset + length - take;
		takeFree(start, take);
		addFree(start, take, false);
		given_back.emplace_back(start, take);
	}
	return given_back;
}

namespace shared_heap {

namespace {

std::size_t pageSize()
{
	static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
	return page;
}

class Heap
{
public:
	// Never destroyed: buffers held by other static objects are released during exit, after any static heap
	// would be gone.
	static Heap& get()
	{
		static Heap* heap = new Heap;
		return *heap;
	}

	void* allocate(std::size_t bytes)
	{
		std::lock_guard lock(mutex_);
		if (!ready())
			return nullptr;
		const std::size_t offset = ranges_->allocate(roundUp(bytes));
		return offset == PageRanges::npos ? nullptr : base_ + offset;
	}

	bool release(void* block)
	{
		std::lock_guard lock(mutex_);
		if (!inside(block, 1) || ranges_->release(offsetOf(block)) == 0)
			return false;
		giveBack();
		return true;
	}

	bool shrink(void* block, std::size_t bytes)
	{
		std::lock_guard lock(mutex_);
		if (!inside(block, 1) || !ranges_->shrink(offsetOf(block), roundUp(bytes)))
			return false;
		giveBack();
		return true;
	}

	bool contains(const void* address, std::size_t bytes)
	{
		std::lock_guard lock(mutex_);
		return inside(address, bytes);
	}

	SharedHeapAdvert advert()
	{
		std::lock_guard lock(mutex_);
		if (!base_)
			return {};
		return {fd_, inode_, static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(base_)),
			static_cast<std::int64_t>(bytes_)};
	}

	char* mapPeer(pid_t pid, const SharedHeapAdvert& advert)
	{
		std::lock_guard lock(mutex_);
		if (advert.bytes <= 0 || pid == getpid())
			return nullptr;
		auto known = peers_.find(pid);
		if (known != peers_.end()) {
			if (known->second.inode == advert.inode && known->second.bytes == advert.bytes)
				return known->second.base;
			munmap(known->second.base, static_cast<std::size_t>(known->second.bytes));
			peers_.erase(known);
		}
		const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(advert.fd);
		const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return nullptr;
		struct stat status {};
		void* at = MAP_FAILED;
		if (fstat(fd, &status) == 0 && static_cast<std::int64_t>(status.st_ino) == advert.inode &&
		    static_cast<std::int64_t>(status.st_size) == advert.bytes)
			at = mmap(nullptr, static_cast<std::size_t>(advert.bytes), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_NORESERVE, fd, 0);
		close(fd);
		if (at == MAP_FAILED)
			return nullptr;
		peers_[pid] = {advert.inode, advert.bytes, static_cast<char*>(at)};
		return static_cast<char*>(at);
	}

	void keepPeers(const std::vector<pid_t>& pids)
	{
		std::lock_guard lock(mutex_);
		for (auto peer = peers_.begin(); peer != peers_.end();) {
			if (std::find(pids.begin(), pids.end(), peer->first) != pids.end()) {
				++peer;
				continue;
			}
			munmap(peer->second.base, static_cast<std::size_t>(peer->second.bytes));
			peer = peers_.erase(peer);
		}
	}

private:
	struct Peer {
		std::int64_t inode;
		std::int64_t bytes;
		char* base;
	};

	// Made on the first allocation, so that a process that never allocates a large buffer has no heap.
	bool ready()
	{
		if (base_ || tried_)
			return base_ != nullptr;
		tried_ = true;
		const char* setting = std::getenv("MALLEO_PCM_SHARED_HEAP");
		if (setting && std::strcmp(setting, "off") == 0)
			return false;
		const long pages = sysconf(_SC_PHYS_PAGES);
		const std::size_t bytes = pages > 0 ? static_cast<std::size_t>(pages) * pageSize() : 0;
		const int fd = bytes ? memfd_create("malleo-pcm-heap", MFD_CLOEXEC) : -1;
		struct stat status {};
		void* at = MAP_FAILED;
		if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0 && fstat(fd, &status) == 0)
			at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
		if (at == MAP_FAILED) {
			std::fprintf(stderr, "libmalleo_pcm: no shared heap (%s); large buffers use malloc\n",
				     std::strerror(errno));
			if (fd >= 0)
				close(fd);
			return false;
		}
		fd_ = fd;
		inode_ = static_cast<std::int64_t>(status.st_ino);
		bytes_ = bytes;
		base_ = static_cast<char*>(at);
		ranges_.emplace(bytes);
		return true;
	}

	void giveBack()
	{
		for (const auto& [offset, length] : ranges_->trim())
			fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
				  static_cast<off_t>(length));
	}

	static std::size_t roundUp(std::size_t bytes)
	{
		const std::size_t page = pageSize();
		return (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
	}

	bool inside(const void* address, std::size_t bytes) const
	{
		const auto* at = static_cast<const char*>(address);
		return base_ && at >= base_ && bytes <= bytes_ && static_cast<std::size_t>(at - base_) <= bytes_ - bytes;
	}
	std::size_t offsetOf(const void* address) const
	{
		return static_cast<std::size_t>(static_cast<const char*>(address) - base_);
	}

	std::mutex mutex_;
	bool tried_ = false;
	int fd_ = -1;
	std::int64_t inode_ = 0;
	std::size_t bytes_ = 0;
	char* base_ = nullptr;
	std::optional<PageRanges> ranges_;
	std::map<pid_t, Peer> peers_;
};

}  // namespace

void* allocate(std::size_t bytes)
{
	return Heap::get().allocate(bytes);
}

bool release(void* block)
{
	return Heap::get().release(block);
}

bool shrink(void* block, std::size_t bytes)
{
	return Heap::get().shrink(block, bytes);
}

bool contains(const void* address, std::size_t bytes)
{
	return Heap::get().contains(address, bytes);
}

SharedHeapAdvert advert()
{
	return Heap::get().advert();
}

char* mapPeer(pid_t pid, const SharedHeapAdvert& advert)
{
	return Heap::get().mapPeer(pid, advert);
}

void keepPeers(const std::vector<pid_t>& pids)
{
	Heap::get().keepPeers(pids);
}

}  // namespace shared_heap

}  // namespace malleo::pcm
