// SPDX-License-Identifier: Apache-2.0
// moveOrCopy (page_move.h) on real mappings of this process: the bytes always arrive; whole pages move only between
// private anonymous mappings at the same offset within a page, and then read as zeros at the source; the partial
// pages at the ends, and the bytes around the range, stay as they were; pages move only onto fresh ones.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "memory/page_move.h"

using namespace malleo::pcm;

namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

// A mapping of `bytes` plus two guard pages, its bytes set to `fill`.
struct Mapping {
	explicit Mapping(std::size_t bytes, int flags = MAP_PRIVATE | MAP_ANONYMOUS, unsigned char fill = 0x5a)
	    : size(bytes + 2 * kPage)
	{
		base = static_cast<unsigned char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, -1, 0));
		REQUIRE(base != MAP_FAILED);
		std::memset(base, fill, size);
	}
	~Mapping() { munmap(base, size); }
	unsigned char* base;
	std::size_t size;
};

unsigned char pattern(std::size_t k)
{
	return static_cast<unsigned char>((k * 2654435761u) >> 13);
}

void fillPattern(unsigned char* at, std::size_t bytes)
{
	for (std::size_t k = 0; k < bytes; ++k)
		at[k] = pattern(k);
}

bool holdsPattern(const unsigned char* at, std::size_t bytes)
{
	for (std::size_t k = 0; k < bytes; ++k)
		if (at[k] != pattern(k))
			return false;
	return true;
}

// Gives back the whole pages inside [at, at + bytes), so that they are fresh again (zeros, not in memory), as a
// reconfiguration's new buffers are: moveOrCopy only moves pages onto such. The partial pages at the ends, and so
// every byte around the range, stay as they were.
void makeFresh(unsigned char* at, std::size_t bytes)
{
	const auto first = (reinterpret_cast<std::uintptr_t>(at) + kPage - 1) / kPage * kPage;
	const auto end = (reinterpret_cast<std::uintptr_t>(at) + bytes) / kPage * kPage;
	REQUIRE(end > first);
	REQUIRE(madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED) == 0);
}

bool all(const unsigned char* at, std::size_t bytes, unsigned char value)
{
	for (std::size_t k = 0; k < bytes; ++k)
		if (at[k] != value)
			return false;
	return true;
}

}  // namespace

TEST_SUITE("page move")
{
	TEST_CASE("mremap moves pages in a process without memory hooks") { CHECK(pageMovesWork()); }

	TEST_CASE("same offset in a page, private anonymous: whole pages move, the ends are copied")
	{
		const std::size_t bytes = 3 * kPageMoveMin + 1000, offset = 24;
		Mapping source(bytes), destination(bytes, MAP_PRIVATE | MAP_ANONYMOUS, 0xa5);
		unsigned char* from = source.base + offset;
		unsigned char* to = destination.base + offset;
		fillPattern(from, bytes);
		makeFresh(to, bytes);

		const std::size_t moved = moveOrCopy(to, from, bytes);
		const std::size_t head = kPage - offset;
		CHECK(moved == (bytes - head) / kPage * kPage);
		CHECK(holdsPattern(to, bytes));
		CHECK(all(destination.base, offset, 0xa5));  // before the range, in its first page
		CHECK(all(to + bytes, destination.size - offset - bytes, 0xa5));
		// The source keeps its partial pages and reads zeros where pages left.
		CHECK(holdsPattern(from, head));
		CHECK(all(from + head, moved, 0));
		CHECK(all(source.base, offset, 0x5a));
	}

	TEST_CASE("different offsets in a page: copied, the source intact")
	{
		const std::size_t bytes = 2 * kPageMoveMin;
		Mapping source(bytes), destination(bytes);
		fillPattern(source.base + 8, bytes);
		makeFresh(destination.base + 16, bytes);
		CHECK(moveOrCopy(destination.base + 16, source.base + 8, bytes) == 0);
		CHECK(holdsPattern(destination.base + 16, bytes));
		CHECK(holdsPattern(source.base + 8, bytes));
	}

	TEST_CASE("shared memory is never moved")
	{
		const std::size_t bytes = 2 * kPageMoveMin;
		Mapping source(bytes, MAP_SHARED | MAP_ANONYMOUS), destination(bytes);
		fillPattern(source.base, bytes);
		makeFresh(destination.base, bytes);
		CHECK(moveOrCopy(destination.base, source.base, bytes) == 0);
		CHECK(holdsPattern(destination.base, bytes));
		CHECK(holdsPattern(source.base, bytes));

		Mapping private_source(bytes), shared_destination(bytes, MAP_SHARED | MAP_ANONYMOUS);
		fillPattern(private_source.base, bytes);
		CHECK(moveOrCopy(shared_destination.base, private_source.base, bytes) == 0);
		CHECK(holdsPattern(shared_destination.base, bytes));
	}

	TEST_CASE("below kPageMoveMin: copied")
	{
		const std::size_t bytes = kPageMoveMin - kPage;
		Mapping source(bytes), destination(bytes);
		fillPattern(source.base, bytes);
		makeFresh(destination.base, bytes);
		CHECK(moveOrCopy(destination.base, source.base, bytes) == 0);
		CHECK(holdsPattern(destination.base, bytes));
		CHECK(holdsPattern(source.base, bytes));
	}

	TEST_CASE("a range over several mappings moves piece by piece; one that is not private is copied")
	{
		// Pages moved into a buffer are a mapping of their own, between the buffer's first and last pages: a
		// second move of the whole buffer spans three mappings, of which the middle one moves and the one-page
		// ones at the ends, below kPageMoveMin, are copied.
		const std::size_t bytes = 2 * kPageMoveMin, offset = 24;
		Mapping first(bytes), second(bytes), third(bytes);
		fillPattern(first.base + offset, bytes);
		makeFresh(second.base + offset, bytes);
		REQUIRE(moveOrCopy(second.base + offset, first.base + offset, bytes) > 0);
		std::vector<unsigned char> expected(second.base, second.base + bytes + kPage);
		makeFresh(third.base, bytes + kPage);
		CHECK(moveOrCopy(third.base, second.base, bytes + kPage) == bytes - kPage);
		CHECK(std::memcmp(third.base, expected.data(), expected.size()) == 0);

		// One page of the destination made executable: not read-write private only, so everything is copied.
		Mapping source(bytes), destination(bytes);
		fillPattern(source.base, bytes);
		REQUIRE(mprotect(destination.base + kPageMoveMin, kPage, PROT_READ | PROT_WRITE | PROT_EXEC) == 0);
		makeFresh(destination.base, bytes);
		CHECK(moveOrCopy(destination.base, source.base, bytes) == 0);
		CHECK(holdsPattern(destination.base, bytes));
		CHECK(holdsPattern(source.base, bytes));
	}

	TEST_CASE("mappings listed far apart in /proc/self/maps are all checked, though it is read only as far as needed")
	{
		const std::size_t bytes = 2 * kPageMoveMin;
		Mapping shared_destination(bytes, MAP_SHARED | MAP_ANONYMOUS), private_destination(bytes);
		// 400 one-page mappings that cannot merge (their protections alternate), mapped after the destinations
		// and so below them: more than a few reads of the file lie between the source, mapped last, and them.
		std::vector<void*> spacers;
		for (int i = 0; i < 400; ++i) {
			void* at = mmap(nullptr, kPage, i % 2 ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			REQUIRE(at != MAP_FAILED);
			spacers.push_back(at);
		}
		Mapping source(bytes);
		REQUIRE(source.base < private_destination.base);  // mmap hands out addresses top down
		fillPattern(source.base, bytes);
		makeFresh(private_destination.base, bytes);
		CHECK(moveOrCopy(shared_destination.base, source.base, bytes) == 0);
		CHECK(holdsPattern(shared_destination.base, bytes));
		CHECK(moveOrCopy(private_destination.base, source.base, bytes) == bytes);
		CHECK(holdsPattern(private_destination.base, bytes));
		for (void* at : spacers)
			munmap(at, kPage);
	}

	TEST_CASE("pages move only onto fresh ones: a destination written before is copied into")
	{
		const std::size_t bytes = 3 * kPageMoveMin;
		Mapping source(bytes), destination(bytes);
		fillPattern(source.base, bytes);
		CHECK(moveOrCopy(destination.base, source.base, bytes) == 0);
		CHECK(holdsPattern(destination.base, bytes));
		CHECK(holdsPattern(source.base, bytes));

		// Fresh but for its middle third, and a page in its last third: only the first third moves, the pages
		// after the written one being fewer than kPageMoveMin.
		makeFresh(destination.base, bytes);
		std::memset(destination.base + kPageMoveMin, 1, kPageMoveMin);
		destination.base[2 * kPageMoveMin + kPageMoveMin / 2] = 1;
		CHECK(moveOrCopy(destination.base, source.base, bytes) == kPageMoveMin);
		CHECK(holdsPattern(destination.base, bytes));
		CHECK(all(source.base, kPageMoveMin, 0));  // moved away
		CHECK(std::memcmp(source.base + kPageMoveMin, destination.base + kPageMoveMin, 2 * kPageMoveMin) == 0);
	}

	TEST_CASE("firstPageResident tells fresh pages from written ones, and looks only at the first whole page")
	{
		const std::size_t bytes = 8 * kPage;
		auto* fresh = static_cast<unsigned char*>(
			mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		REQUIRE(fresh != MAP_FAILED);
		CHECK_FALSE(firstPageResident(fresh, bytes));
		fresh[kPage] = 1;  // the second page: a range starting inside the first begins with it
		CHECK_FALSE(firstPageResident(fresh, bytes));
		CHECK(firstPageResident(fresh + 1, bytes - 1));
		CHECK_FALSE(firstPageResident(fresh + 1, kPage));  // no whole page inside
		populatePages(fresh + 2 * kPage, 2 * kPage);
		CHECK(firstPageResident(fresh + 2 * kPage, 2 * kPage));
		munmap(fresh, bytes);
	}

	TEST_CASE("a block placed like malloc moves by its pages into a buffer the program callocs; one on a page is copied")
	{
		// Above glibc's highest mmap threshold (32 MiB): calloc maps such a buffer on its own.
		const std::int64_t columns = 5 * 1024, column_bytes = 8 * 1024, halo = 1;
		const auto edge = static_cast<std::size_t>(halo * column_bytes);
		const auto bytes = static_cast<std::size_t>((columns + 2 * halo) * column_bytes);
		for (const Placement placement : {Placement::LikeMalloc, Placement::Page}) {
			CAPTURE(static_cast<int>(placement));
			auto* block = static_cast<unsigned char*>(allocateBlock(columns, halo, column_bytes, false, placement));
			REQUIRE(block != nullptr);
			CHECK(all(block, edge, 0));
			CHECK(all(block + bytes - edge, edge + 1, 0));  // the halo and the byte after it
			fillPattern(block + edge, bytes - 2 * edge);
			auto* buffer = static_cast<unsigned char*>(std::calloc(bytes, 1));
			REQUIRE(buffer != nullptr);
			makeFresh(buffer, bytes);  // as calloc leaves it, unless MALLOC_PERTURB_ makes glibc write it
			const std::size_t moved = moveOrCopy(buffer, block, bytes);
			if (placement == Placement::LikeMalloc)
				CHECK(moved >= bytes - 2 * kPage);
			else
				CHECK(moved == 0);
			CHECK(holdsPattern(buffer + edge, bytes - 2 * edge));
			std::free(buffer);
			std::free(block);
		}
	}
}
