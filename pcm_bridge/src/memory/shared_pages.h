// SPDX-License-Identifier: Apache-2.0
// Blocks whose pages another process can take over instead of copying them. Into a process's fresh private memory
// every byte that arrives costs a first touch of its page, and on the machines met so far that fault, not the copy,
// sets the pace of a redistribution into new buffers (docs/notes/shared-blocks.md). Pages of a shared memory file
// are already there: a process on the same host that may open the file (through /proc/<pid>/fd, under the rules of
// process_vm_readv) maps them into its own block, which costs page-table entries only. A block is a row of such
// mappings: it starts as one memfd of its own and takes over pieces of other blocks' files as redistributions hand
// them over (page_adoption.h).
//
// Each page of a file belongs to one live block at a time. A block frees what it owns by punching it out of its
// file; pages it gave away belong to the block that took them, so it only unmaps them. Nothing here uses MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <sys/types.h>

namespace malleo::pcm {

// Whether this process can make shared blocks (memfd_create works), tried once.
bool sharedPagesWork();

// A block of `bytes`, reading as zeros, backed by a memfd of its own, starting `lead` bytes past the start of a page
// (modulo the page size). Pages can be taken over only where the sender's bytes and the receiver's sit at the same
// offset within a page, so a block1d buffer places each block by the global index of its first byte: then every
// element is at the same offset in every block that ever holds it. Null when that fails (no memfd, memory short).
// Free it with releaseShared.
void* allocateShared(std::size_t bytes, std::size_t lead = 0);

// The `lead` (allocateShared) that places a block whose first element, after `halo` others, has the global index
// `first`: every element then sits at the same offset within a page in every block that holds it.
std::size_t sharedLead(std::int64_t first, std::int64_t halo, std::int64_t element_bytes);

// Unmaps the shared block that starts at `base` and punches out of their files the pages it owns. False (nothing
// done) when `base` is not the start of a shared block.
bool releaseShared(void* base);

// Whether [at, at + bytes) lies inside one shared block of this process.
bool insideShared(const void* at, std::size_t bytes);

// The bytes of the shared block that starts at `block` (as allocateShared was asked for, rounded up to the end of
// its last page); 0 when `block` is not the start of one.
std::size_t sharedBytes(const void* block);

// Copies `bytes` from `from` to `to` (not overlapping), handing the whole pages between over instead where both lie
// in shared blocks of this process at the same offset within a page: `to` maps them, and `from` maps fresh pages of
// its own there (reading zeros). Anything else (other offsets, private memory on either side) is copied. Returns the
// bytes handed over.
std::size_t moveShared(void* to, void* from, std::size_t bytes);

// A piece of a file behind a range of a shared block: `length` bytes at `offset` from the range's start are the
// file's bytes at `file_offset`. The file is this process's descriptor `fd`, which another process opens as
// /proc/<this pid>/fd/<fd>; `device` and `inode` say which file that must be.
struct FilePiece {
	std::int64_t offset = 0;
	std::int64_t length = 0;
	std::int64_t fd = -1;
	std::int64_t fileOffset = 0;
	std::int64_t device = 0;
	std::int64_t inode = 0;
};

// The pieces behind the whole pages that hold [at, at + bytes), in order and covering them, when the range lies
// inside a shared block and they are no more than `most`; false otherwise. The first piece's offset is negative
// when `at` is not on a page.
bool describeShared(const void* at, std::size_t bytes, std::size_t most, std::vector<FilePiece>& pieces);

// What one redistribution takes over and gives away, pending until every process knows it succeeded (keep); a
// redistribution that fails abandons it.
class TakenPages
{
public:
	TakenPages() = default;
	TakenPages(const TakenPages&) = delete;
	TakenPages& operator=(const TakenPages&) = delete;
	~TakenPages();

	// Whether this process can map process `pid`'s file of `piece` (opened now and kept until it is not used).
	bool canOpen(pid_t pid, const FilePiece& piece);
	// Maps `piece` of process `pid`'s file over [at, at + piece.length) of one of this process's shared blocks (on
	// whole pages), in place of what that block's own file held there (punched out). 0, or an errno value.
	int take(void* at, pid_t pid, const FilePiece& piece);
	// The whole pages [at, at + bytes) of a shared block of this process are another block's now (or this
	// process's new one): once kept, the range maps fresh pages of this block's own (reading zeros), and those
	// pages are the taker's alone.
	void giveAway(const void* at, std::size_t bytes);
	// The redistribution succeeded: the blocks own what they took and no longer what they gave away.
	void keep();
	// It failed: the ranges that took pages over map fresh pages of their blocks' own again (a block kept in place
	// carries on with them), and the givers keep everything. Also what destroying it without keep() does.
	void abandon();
	std::int64_t bytesTaken() const { return takenBytes_; }

private:
	struct Taken {
		std::uintptr_t at;
		std::int64_t length, fileOffset, device, inode;
	};
	std::vector<Taken> taken_;
	std::vector<std::pair<std::uintptr_t, std::size_t>> given_;
	std::int64_t takenBytes_ = 0;
	bool kept_ = false;
};

}  // namespace malleo::pcm
