// SPDX-License-Identifier: Apache-2.0
// Shared blocks (shared_pages.h) on real memfds of this process, which takes pages over from itself as another
// process on the host would (through /proc/<pid>/fd): the pages a block took read what the giver wrote, a kept
// redistribution leaves them to the taker when the giver is released, one that is not kept leaves the giver
// whole, and every page is freed (punched out of its file) by exactly the block that owns it.
#include <cstdint>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "memory/shared_pages.h"

using namespace malleo::pcm;

namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

unsigned char pattern(std::size_t k)
{
	return static_cast<unsigned char>((k * 2654435761u) >> 13);
}

// The one file behind [at, at + bytes) and the bytes it holds in memory.
struct FileUse {
	int fd = -1;
	std::int64_t allocated = 0;
};

FileUse fileBehind(const void* at, std::size_t bytes)
{
	std::vector<FilePiece> pieces;
	REQUIRE(describeShared(at, bytes, 8, pieces));
	REQUIRE(pieces.size() == 1);
	struct stat status{};
	REQUIRE(fstat(static_cast<int>(pieces[0].fd), &status) == 0);
	return {static_cast<int>(pieces[0].fd), static_cast<std::int64_t>(status.st_blocks) * 512};
}

std::int64_t allocatedBytes(int fd)
{
	struct stat status{};
	REQUIRE(fstat(fd, &status) == 0);
	return static_cast<std::int64_t>(status.st_blocks) * 512;
}

} // namespace

TEST_CASE("a shared block starts where asked within a page, reads zeros and is released once")
{
	REQUIRE(sharedPagesWork());
	auto* block = static_cast<unsigned char*>(allocateShared(3 * kPage + 17, 100));
	REQUIRE(block);
	CHECK(reinterpret_cast<std::uintptr_t>(block) % kPage == 100);
	for (std::size_t k = 0; k < 3 * kPage + 17; ++k)
		REQUIRE(block[k] == 0);
	CHECK(insideShared(block, 3 * kPage + 17));
	CHECK_FALSE(insideShared(block, 5 * kPage));
	CHECK_FALSE(releaseShared(block + 1));  // not a block's start
	CHECK(releaseShared(block));
	CHECK_FALSE(releaseShared(block));
	CHECK_FALSE(insideShared(block, 1));
}

TEST_CASE("describing a range off a page names the whole pages around it")
{
	auto* block = static_cast<unsigned char*>(allocateShared(8 * kPage, 100));
	std::vector<FilePiece> pieces;
	REQUIRE(describeShared(block + 10, 2 * kPage, 4, pieces));
	REQUIRE(pieces.size() == 1);
	CHECK(pieces[0].offset == -110);  // from the page the range starts in
	CHECK(pieces[0].fileOffset == 0);
	CHECK(pieces[0].length == static_cast<std::int64_t>(3 * kPage));
	CHECK_FALSE(describeShared(block, 10 * kPage, 4, pieces));  // past the block
	releaseShared(block);
}

TEST_CASE("pages taken over and kept belong to the taker; the giver frees only the rest")
{
	const std::size_t bytes = 16 * kPage;
	auto* giver = static_cast<unsigned char*>(allocateShared(bytes));
	auto* taker = static_cast<unsigned char*>(allocateShared(bytes));
	REQUIRE((giver && taker));
	for (std::size_t k = 0; k < bytes; ++k)
		giver[k] = pattern(k);
	const FileUse giver_file = fileBehind(giver, bytes);
	CHECK(giver_file.allocated == static_cast<std::int64_t>(bytes));

	// Pages 4..11 of the giver become pages 2..9 of the taker.
	std::vector<FilePiece> pieces;
	REQUIRE(describeShared(giver + 4 * kPage, 8 * kPage, 8, pieces));
	REQUIRE(pieces.size() == 1);
	{
		TakenPages taken;
		REQUIRE(taken.canOpen(getpid(), pieces[0]));
		REQUIRE(taken.take(taker + 2 * kPage, getpid(), pieces[0]) == 0);
		taken.giveAway(giver + 4 * kPage, 8 * kPage);
		CHECK(taken.bytesTaken() == static_cast<std::int64_t>(8 * kPage));
		for (std::size_t k = 0; k < 8 * kPage; ++k)
			REQUIRE(taker[2 * kPage + k] == pattern(4 * kPage + k));
		taken.keep();
	}
	// The taker's block is three pieces now: its own file, the giver's, its own again.
	REQUIRE(describeShared(taker, bytes, 8, pieces));
	CHECK(pieces.size() == 3);

	CHECK(releaseShared(giver));
	// The giver punched its 8 other pages; the 8 it gave away stay for the taker.
	CHECK(allocatedBytes(giver_file.fd) == static_cast<std::int64_t>(8 * kPage));
	for (std::size_t k = 0; k < 8 * kPage; ++k)
		REQUIRE(taker[2 * kPage + k] == pattern(4 * kPage + k));
	taker[2 * kPage] ^= 0xff;  // still writable, and the taker's alone
	const int giver_fd = giver_file.fd;
	CHECK(releaseShared(taker));
	// The last piece of the giver's file is gone, and the descriptor with it.
	CHECK(fcntl(giver_fd, F_GETFD) == -1);
}

TEST_CASE("pages taken over but not kept stay the giver's")
{
	const std::size_t bytes = 8 * kPage;
	auto* giver = static_cast<unsigned char*>(allocateShared(bytes));
	auto* taker = static_cast<unsigned char*>(allocateShared(bytes));
	for (std::size_t k = 0; k < bytes; ++k)
		giver[k] = pattern(k);
	const FileUse giver_file = fileBehind(giver, bytes);
	std::vector<FilePiece> pieces;
	REQUIRE(describeShared(giver, bytes, 8, pieces));
	{
		TakenPages taken;
		REQUIRE(taken.take(taker, getpid(), pieces[0]) == 0);
		taken.giveAway(giver, bytes);
		// A failed redistribution: the taker's new block is released whole, nothing is kept.
		CHECK(releaseShared(taker));
	}
	CHECK(allocatedBytes(giver_file.fd) == static_cast<std::int64_t>(bytes));
	for (std::size_t k = 0; k < bytes; ++k)
		REQUIRE(giver[k] == pattern(k));
	CHECK(releaseShared(giver));
}

TEST_CASE("pieces of one file that come back together are one piece again")
{
	const std::size_t bytes = 8 * kPage;
	auto* first = static_cast<unsigned char*>(allocateShared(bytes));
	auto* second = static_cast<unsigned char*>(allocateShared(bytes));
	std::vector<FilePiece> pieces;
	REQUIRE(describeShared(first, bytes, 8, pieces));
	{
		// The whole of the first block's file, mapped into the second as two halves.
		TakenPages taken;
		FilePiece low = pieces[0], high = pieces[0];
		low.length = high.length = static_cast<std::int64_t>(bytes / 2);
		high.fileOffset += low.length;
		REQUIRE(taken.take(second, getpid(), low) == 0);
		REQUIRE(taken.take(second + bytes / 2, getpid(), high) == 0);
		taken.giveAway(first, bytes);
		taken.keep();
	}
	REQUIRE(describeShared(second, bytes, 8, pieces));
	CHECK(pieces.size() == 1);
	CHECK(releaseShared(first));
	CHECK(releaseShared(second));
}

TEST_CASE("moving between two blocks of one process hands the whole pages over and copies the ends")
{
	const std::size_t bytes = 10 * kPage + 300;
	auto* from = static_cast<unsigned char*>(allocateShared(bytes, 100));
	auto* to = static_cast<unsigned char*>(allocateShared(bytes, 100));
	for (std::size_t k = 0; k < bytes; ++k)
		from[k] = pattern(k);
	CHECK(sharedBytes(from) >= bytes);
	CHECK(sharedBytes(from + 1) == 0);
	// 100 bytes into a page, 10 pages and 300 bytes: the 9 whole pages from kPage - 100 on are handed over.
	const std::size_t first = kPage - 100;
	CHECK(moveShared(to, from, bytes) == 9 * kPage);
	for (std::size_t k = 0; k < bytes; ++k)
		REQUIRE(to[k] == pattern(k));
	CHECK(from[first] == 0);  // fresh pages of its own where it gave them away
	CHECK(releaseShared(from));
	for (std::size_t k = 0; k < bytes; ++k)
		REQUIRE(to[k] == pattern(k));
	CHECK(releaseShared(to));

	// Blocks at different offsets within a page: copied.
	auto* a = static_cast<unsigned char*>(allocateShared(4 * kPage));
	auto* b = static_cast<unsigned char*>(allocateShared(4 * kPage, 8));
	std::memset(a, 7, 4 * kPage);
	CHECK(moveShared(b, a, 4 * kPage - 8) == 0);
	CHECK(b[0] == 7);
	CHECK(a[0] == 7);
	// Into private memory: copied, and the block keeps its pages.
	std::vector<unsigned char> plain(4 * kPage);
	CHECK(moveShared(plain.data(), a, 4 * kPage) == 0);
	CHECK(plain[4 * kPage - 1] == 7);
	CHECK(a[4 * kPage - 1] == 7);
	releaseShared(a);
	releaseShared(b);
}
