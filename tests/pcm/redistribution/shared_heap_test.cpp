// SPDX-License-Identifier: Apache-2.0
// The shared heap (shared_heap.h): its bookkeeping as pure logic (first fit, merging, which free pages go back), then
// the heap of this process itself, and a mapping of it opened the way a peer opens it, through another process's
// /proc/<pid>/fd. Copies between MPI processes through such mappings are checked bit for bit in
// executor_mpi_test.cpp.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "shared_heap.h"

using namespace malleo::pcm;

namespace {

constexpr std::size_t P = 4096;  // a page, for PageRanges any unit will do

std::size_t givenBack(const std::vector<std::pair<std::size_t, std::size_t>>& ranges)
{
	std::size_t bytes = 0;
	for (const auto& range : ranges)
		bytes += range.second;
	return bytes;
}

}  // namespace

TEST_CASE("page ranges: first fit from the lowest offset, freed neighbours merge")
{
	PageRanges ranges(100 * P);
	const std::size_t a = ranges.allocate(3 * P), b = ranges.allocate(2 * P), c = ranges.allocate(P);
	CHECK(a == 0);
	CHECK(b == 3 * P);
	CHECK(c == 5 * P);
	CHECK(ranges.inUse() == 6 * P);
	CHECK(ranges.release(b) == 2 * P);
	CHECK(ranges.allocate(P) == 3 * P);  // into b's hole
	CHECK(ranges.release(a) == 3 * P);
	CHECK(ranges.release(3 * P) == P);
	CHECK(ranges.allocate(4 * P) == 0);  // a's and b's pages as one run
	CHECK(ranges.allocate(200 * P) == PageRanges::npos);
	CHECK(ranges.allocate(0) == PageRanges::npos);
	CHECK(ranges.release(7 * P) == 0);  // not a block
	CHECK(ranges.release(0) == 4 * P);
	CHECK(ranges.release(0) == 0);  // twice
}

TEST_CASE("page ranges: free pages holding memory are kept up to the bytes in use, the highest given back first")
{
	PageRanges ranges(100 * P);
	const std::size_t a = ranges.allocate(10 * P), b = ranges.allocate(4 * P);
	CHECK(ranges.residentFree() == 0);
	CHECK(ranges.trim().empty());
	ranges.release(a);
	CHECK(ranges.residentFree() == 10 * P);
	// 10 pages free and holding memory against 4 in use: the top 6 of a's go back.
	const auto back = ranges.trim();
	REQUIRE(back.size() == 1);
	CHECK(back[0] == std::make_pair(4 * P, 6 * P));
	CHECK(ranges.residentFree() == 4 * P);
	CHECK(ranges.trim().empty());
	// A block may span free pages that hold memory and free pages that do not.
	CHECK(ranges.allocate(10 * P) == 0);
	CHECK(ranges.residentFree() == 0);
	ranges.release(0);
	ranges.release(b);
	// Nothing in use (a process that left): every page goes back.
	CHECK(givenBack(ranges.trim()) == 14 * P);
	CHECK(ranges.residentFree() == 0);
	CHECK(ranges.inUse() == 0);
	CHECK(ranges.allocate(100 * P) == 0);  // one run again
}

TEST_CASE("page ranges: shrinking frees the end of a block")
{
	PageRanges ranges(100 * P);
	const std::size_t a = ranges.allocate(10 * P);
	CHECK_FALSE(ranges.shrink(a, 10 * P));
	CHECK_FALSE(ranges.shrink(a + P, P));
	CHECK(ranges.shrink(a, 4 * P));
	CHECK(ranges.inUse() == 4 * P);
	CHECK(ranges.residentFree() == 6 * P);
	CHECK(givenBack(ranges.trim()) == 2 * P);
	CHECK(ranges.allocate(6 * P) == 4 * P);
	CHECK(ranges.release(a) == 4 * P);
}

TEST_CASE("the heap of this process: page-aligned blocks, only its own released, kept pages reused")
{
	const std::size_t bytes = std::size_t{3} << 20;
	auto* block = static_cast<unsigned char*>(shared_heap::allocate(bytes));
	REQUIRE(block != nullptr);  // MALLEO_PCM_SHARED_HEAP is not set in the tests
	CHECK(reinterpret_cast<std::uintptr_t>(block) % static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)) == 0);
	CHECK(shared_heap::contains(block, bytes));
	CHECK_FALSE(shared_heap::contains(block - 1, 2));
	std::memset(block, 0x5a, bytes);
	void* other = std::malloc(64);
	CHECK_FALSE(shared_heap::release(other));
	CHECK_FALSE(shared_heap::shrink(other, 8));
	std::free(other);
	CHECK(shared_heap::shrink(block, bytes / 3));
	auto* second = static_cast<unsigned char*>(shared_heap::allocate(bytes));
	REQUIRE(second != nullptr);
	CHECK(block[bytes / 3 - 1] == 0x5a);  // shrinking kept the start
	CHECK(shared_heap::release(block));
	CHECK_FALSE(shared_heap::release(block));
	// The freed pages are kept (no more than in use) and handed out again, contents and all.
	auto* again = static_cast<unsigned char*>(shared_heap::allocate(bytes / 3));
	CHECK(again == block);
	CHECK(again[0] == 0x5a);
	CHECK(shared_heap::release(again));
	CHECK(shared_heap::release(second));
	const SharedHeapAdvert advert = shared_heap::advert();
	CHECK(advert.bytes > 0);
	const auto at = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(block));
	CHECK(at >= advert.base);
	CHECK(at + static_cast<std::int64_t>(bytes) <= advert.base + advert.bytes);
	CHECK(shared_heap::mapPeer(getpid(), advert) == nullptr);  // this process is no peer of itself
}

TEST_CASE("a peer maps a process's heap through /proc and sees its bytes; a wrong inode is refused")
{
	const std::size_t bytes = std::size_t{2} << 20;
	auto* block = static_cast<unsigned char*>(shared_heap::allocate(bytes));
	REQUIRE(block != nullptr);
	std::memset(block, 0x11, bytes);
	const SharedHeapAdvert advert = shared_heap::advert();
	// A child holds the heap's descriptor (fork keeps it) and waits; this process maps the heap through the
	// child's /proc/<pid>/fd as a peer on the host would.
	const pid_t child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		for (;;)
			pause();
	}
	SharedHeapAdvert wrong = advert;
	wrong.inode += 1;
	CHECK(shared_heap::mapPeer(child, wrong) == nullptr);
	char* mapped = shared_heap::mapPeer(child, advert);
	REQUIRE(mapped != nullptr);
	CHECK(shared_heap::mapPeer(child, advert) == mapped);  // kept
	unsigned char* through = reinterpret_cast<unsigned char*>(mapped) +
				 (reinterpret_cast<std::intptr_t>(block) - advert.base);
	CHECK(through[bytes - 1] == 0x11);
	through[7] = 0x22;
	CHECK(block[7] == 0x22);
	shared_heap::keepPeers({});  // unmapped
	kill(child, SIGKILL);
	waitpid(child, nullptr, 0);
	CHECK(shared_heap::mapPeer(child, advert) == nullptr);  // gone
	CHECK(shared_heap::release(block));
}
