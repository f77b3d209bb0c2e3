/* SPDX-License-Identifier: Apache-2.0 */
/* How fast this machine hands out fresh memory: allocates ROUNDS buffers of MIB MiB one after the other, never
 * freeing them, and times the first touch of each (one madvise(MADV_POPULATE_WRITE), as the redistribution's executor
 * does for a new buffer). On a VM that hands free memory back to its host (free page reporting), the first buffers
 * come from memory the guest freed recently and are fast, the later ones cost a host fault per page
 * (docs/performance.md, "Machines").
 *
 * KIND: 4k (the default) as above; huge: each buffer 2 MiB aligned and advised MADV_HUGEPAGE first (transparent huge
 * pages in madvise mode; MALLEO_PCM_HUGE_PAGES=on); move: instead, each round fills a buffer and times moving its
 * pages into a fresh one (mremap with MREMAP_DONTUNMAP, as the bridge keeps a merge's data: page_move.h) against
 * faulting a fresh one in and copying into it; faults: each round times faulting a fresh buffer in with one madvise,
 * then writing it, against writing another page by page (memset: a fault per page); giveback: each round times two
 * memcpys between two touched buffers right after a third, written page by page, was given back to the kernel by
 * munmap, by MADV_DONTNEED, by MADV_FREE, had its pages moved to another address (mremap) or none of these (on some
 * VMs the first pass over memory after an unmap or a move of more than a few MiB is slow: docs/performance.md,
 * "Machines"); together: each round times one process faulting a fresh buffer in alone, two processes each faulting
 * one in at the same time, and two processes faulting in the two halves of one buffer of twice the size at the same
 * time, its owner with one madvise, the other writing its half through process_vm_writev from a touched buffer of its
 * own (as the two ends of a redistribution's direct transfer fault a receiver's new buffer: how far the machine's
 * first touches scale over its cores); adopt: each round times taking over pages another process wrote into shared
 * memory (a memfd of its own, mapped through /proc/<pid>/fd/<fd> with MAP_POPULATE: the pages are already there)
 * against what a redistribution does with private memory, faulting a fresh buffer in and copying the other's data
 * into it with process_vm_readv, and what the other process paid to fault in its shared and its private memory.
 *
 *	build/bench/first_touch [MIB [ROUNDS [4k|huge|move|faults|giveback|together|adopt]]]
 *	    (default 150 MiB, 8 rounds, 4k)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#define HUGE_PAGE ((size_t)2 << 20)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// A private anonymous mapping of `bytes`, which munmap gives back whole.
static char *mapping(size_t bytes)
{
	char *at = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (at == MAP_FAILED) {
		perror("first_touch: mmap");
		exit(1);
	}
	return at;
}

// `bytes` of fresh memory, on a 2 MiB boundary (the rest of the mapping is left mapped: the buffers are never freed).
static char *fresh(size_t bytes)
{
	char *at = mapping(bytes + HUGE_PAGE);
	return (char *)(((unsigned long)at + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
}

static double populate(char *buffer, size_t bytes)
{
	const double start = now();
	if (madvise(buffer, bytes, MADV_POPULATE_WRITE) != 0) {
		perror("first_touch: madvise(MADV_POPULATE_WRITE)");
		exit(1);
	}
	return now() - start;
}

static double gigabytesPerSecond(size_t bytes, double seconds)
{
	return (double)bytes / seconds / 1e9;
}

// The buffers are never freed, as in the 4k kind: an unmap would slow the next round on some VMs ("giveback").
static int firstTouches(long mib, size_t bytes, long rounds)
{
	printf("MiB %ld, fresh buffers: faulted in with one madvise | then written (memset) | written page by page:", mib);
	for (long r = 0; r < rounds; ++r) {
		char *populated = fresh(bytes), *faulted = fresh(bytes);
		const double populating = populate(populated, bytes);
		double start = now();
		memset(populated, 1, bytes);
		const double writing = now() - start;
		start = now();
		memset(faulted, 1, bytes);
		const double faulting = now() - start;
		if (populated[bytes / 2] != 1 || faulted[bytes / 2] != 1)
			return 1;
		printf(" %.2f | %.2f | %.2f GB/s", gigabytesPerSecond(bytes, populating), gigabytesPerSecond(bytes, writing),
		       gigabytesPerSecond(bytes, faulting));
		fflush(stdout);
	}
	printf("\n");
	return 0;
}

static double timedCopy(char *to, const char *from, size_t bytes)
{
	const double start = now();
	memcpy(to, from, bytes);
	return now() - start;
}

// For each way of giving a buffer written page by page back to the kernel, two memcpys in a row between two other,
// touched buffers right after it; the buffer is then unmapped and the copy warmed again, outside the timing.
static int copyAfterGivingBack(long mib, size_t bytes, long rounds)
{
	enum { UNMAP, DONTNEED, FREE, MOVE, NOTHING, WAYS };
	static const char *const ways[WAYS] = {"munmap", "MADV_DONTNEED", "MADV_FREE", "mremap", "nothing"};
	char *from = fresh(bytes), *to = fresh(bytes);
	memset(from, 1, bytes);
	memset(to, 2, bytes);
	printf("MiB %ld, two memcpys between touched buffers (GB/s, first/second) right after another is given back by",
	       mib);
	for (int way = 0; way < WAYS; ++way)
		printf("%s %s", way ? " |" : "", ways[way]);
	printf(":");
	for (long r = 0; r < rounds; ++r) {
		for (int way = 0; way < WAYS; ++way) {
			char *other = mapping(bytes), *target = way == MOVE ? mapping(bytes) : NULL;
			memset(other, 3, bytes);
			if (way == UNMAP) {
				munmap(other, bytes);
			} else if (way == DONTNEED || way == FREE) {
				madvise(other, bytes, way == DONTNEED ? MADV_DONTNEED : MADV_FREE);
			} else if (way == MOVE) {  // its pages moved, as page_move.h keeps a merge's data
				const int flags = MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP;
				if (mremap(other, bytes, bytes, flags, target) != target) {
					perror("first_touch: mremap");
					return 1;
				}
			}
			const double first = timedCopy(to, from, bytes), second = timedCopy(to, from, bytes);
			if (way != UNMAP)
				munmap(other, bytes);
			if (target)
				munmap(target, bytes);
			memcpy(to, from, bytes);
			printf("%s %.1f/%.1f", way ? " |" : "", gigabytesPerSecond(bytes, first),
			       gigabytesPerSecond(bytes, second));
		}
		printf(";");
		fflush(stdout);
	}
	printf("\n");
	return 0;
}

// Copies `bytes` between `local` in this process and `remote` in process `pid` with `call` (process_vm_readv or
// process_vm_writev), in as many calls as it takes: one may copy less than asked. 0, or 1 after saying why.
static int copyWith(ssize_t (*call)(pid_t, const struct iovec *, unsigned long, const struct iovec *, unsigned long,
				    unsigned long),
		    pid_t pid, char *local, char *remote, size_t bytes)
{
	for (size_t done = 0; done < bytes;) {
		const struct iovec here = {local + done, bytes - done}, there = {remote + done, bytes - done};
		const ssize_t n = call(pid, &here, 1, &there, 1, 0);
		if (n <= 0) {
			perror("first_touch: copying between processes");
			return 1;
		}
		done += (size_t)n;
	}
	return 0;
}

static void populateInChild(size_t bytes)
{
	populate(mapping(bytes), bytes);
	_exit(0);
}

// Writes `bytes` from a touched buffer of its own into the fresh `buffer` of process `parent` once told to start (a
// byte on `go`), after saying it is ready (a byte on `ready`).
static void writeIntoParent(char *buffer, size_t bytes, pid_t parent, int ready, int go)
{
	char *source = mapping(bytes);
	memset(source, 1, bytes);
	char byte = 0;
	if (write(ready, &byte, 1) != 1 || read(go, &byte, 1) != 1)
		_exit(1);
	_exit(copyWith(process_vm_writev, parent, source, buffer, bytes));
}

// Two pipes between this process and a child: the child says it is ready on one, is told to go on the other.
static void openPipes(int ready[2], int go[2])
{
	if (pipe(ready) != 0 || pipe(go) != 0) {
		perror("first_touch: pipe");
		exit(1);
	}
}

static void closePipes(int ready[2], int go[2])
{
	for (int i = 0; i < 2; ++i)
		close(ready[i]), close(go[i]);
}

static pid_t forked(void)
{
	const pid_t child = fork();
	if (child < 0) {
		perror("first_touch: fork");
		exit(1);
	}
	return child;
}

static int succeeded(pid_t child)
{
	int status = 0;
	return waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Every buffer is given back at the end of its round, so that each round finds the memory the one before freed: kept,
// the later rounds would meet memory the guest has not used for a while, which on a VM that hands free memory back
// to its host costs a host fault a page as well (the default kind's later rounds).
static int faultsTogether(long mib, size_t bytes, long rounds)
{
	printf("MiB %ld a process, fresh memory faulted in (GB/s): one process alone | two at once, each its own | one "
	       "buffer of twice the size, half by its madvise, half by another's process_vm_writev:", mib);
	const pid_t self = getpid();
	for (long r = 0; r < rounds; ++r) {
		char *own = mapping(bytes);
		const double alone = populate(own, bytes);
		munmap(own, bytes);
		double start = now();
		const pid_t first = forked();
		if (first == 0)
			populateInChild(bytes);
		const pid_t second = forked();
		if (second == 0)
			populateInChild(bytes);
		if (!succeeded(first) || !succeeded(second))
			return 1;
		const double two = now() - start;

		char *buffer = mapping(2 * bytes);
		int ready[2], go[2];
		openPipes(ready, go);
		const pid_t writer = forked();
		if (writer == 0)
			writeIntoParent(buffer + bytes, bytes, self, ready[1], go[0]);
		char byte = 0;
		if (read(ready[0], &byte, 1) != 1)
			return 1;
		start = now();
		if (write(go[1], &byte, 1) != 1)
			return 1;
		populate(buffer, bytes);
		if (!succeeded(writer) || buffer[bytes + bytes / 2] != 1)
			return 1;
		const double halves = now() - start;
		munmap(buffer, 2 * bytes);
		closePipes(ready, go);
		printf(" %.2f | %.2f | %.2f;", gigabytesPerSecond(bytes, alone), gigabytesPerSecond(2 * bytes, two),
		       gigabytesPerSecond(2 * bytes, halves));
		fflush(stdout);
	}
	printf("\n");
	return 0;
}

// Faults in and fills with ones `bytes` of a memfd and of private memory, sends the memfd's descriptor number, both
// addresses and the nanoseconds each took to fault in over `ready`, and waits for a byte on `go` (the parent has done
// with them) before it exits.
static void holdData(size_t bytes, int ready, int go)
{
	const int fd = memfd_create("first_touch", 0);
	char *shared = fd < 0 || ftruncate(fd, (off_t)bytes) != 0
			       ? MAP_FAILED
			       : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (shared == MAP_FAILED) {
		perror("first_touch: memfd");
		_exit(1);
	}
	char *private = mapping(bytes);
	const double populating_shared = populate(shared, bytes), populating_private = populate(private, bytes);
	memset(shared, 1, bytes);
	memset(private, 1, bytes);
	const long words[5] = {fd, (long)shared, (long)private, (long)(populating_shared * 1e9),
			       (long)(populating_private * 1e9)};
	char byte = 0;
	if (write(ready, words, sizeof words) != (ssize_t)sizeof words || read(go, &byte, 1) != 1)
		_exit(1);
	_exit(0);
}

static int adoptPages(long mib, size_t bytes, long rounds)
{
	printf("MiB %ld, another process's data into this one (GB/s): its shared pages mapped with MAP_POPULATE | a "
	       "fresh buffer faulted in with one madvise, then process_vm_readv; and what the other paid to fault its "
	       "memory in first (GB/s): shared | private:", mib);
	for (long r = 0; r < rounds; ++r) {
		int ready[2], go[2];
		openPipes(ready, go);
		const pid_t holder = forked();
		if (holder == 0)
			holdData(bytes, ready[1], go[0]);
		long words[5] = {0, 0, 0, 0, 0};
		if (read(ready[0], words, sizeof words) != (ssize_t)sizeof words)
			return 1;
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/fd/%ld", (int)holder, words[0]);
		double start = now();
		const int fd = open(path, O_RDWR);
		char *adopted = fd < 0 ? MAP_FAILED
				       : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
		if (adopted == MAP_FAILED) {
			perror("first_touch: mapping the other's memfd");
			return 1;
		}
		const double adopting = now() - start;
		char *copy = mapping(bytes);
		start = now();
		populate(copy, bytes);
		if (copyWith(process_vm_readv, holder, copy, (char *)words[2], bytes) != 0)
			return 1;
		const double copying = now() - start;
		const char byte = 0;
		if (adopted[bytes / 2] != 1 || copy[bytes / 2] != 1 || write(go[1], &byte, 1) != 1 || !succeeded(holder))
			return 1;
		munmap(adopted, bytes);
		munmap(copy, bytes);
		close(fd);
		closePipes(ready, go);
		printf(" %.2f | %.2f; %.2f | %.2f;", gigabytesPerSecond(bytes, adopting), gigabytesPerSecond(bytes, copying),
		       gigabytesPerSecond(bytes, (double)words[3] * 1e-9), gigabytesPerSecond(bytes, (double)words[4] * 1e-9));
		fflush(stdout);
	}
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	const long mib = argc > 1 ? atol(argv[1]) : 150;
	const long rounds = argc > 2 ? atol(argv[2]) : 8;
	const char *kind = argc > 3 ? argv[3] : "4k";
	const int huge = strcmp(kind, "huge") == 0, move = strcmp(kind, "move") == 0;
	const int faults = strcmp(kind, "faults") == 0, give_back = strcmp(kind, "giveback") == 0;
	const int together = strcmp(kind, "together") == 0, adopt = strcmp(kind, "adopt") == 0;
	if (mib < 1 || rounds < 1 ||
	    (!huge && !move && !faults && !give_back && !together && !adopt && strcmp(kind, "4k") != 0)) {
		fprintf(stderr, "usage: first_touch [MIB [ROUNDS [4k|huge|move|faults|giveback|together|adopt]]] "
				"(positive integers)\n");
		return 2;
	}
	const size_t bytes = (size_t)mib << 20;
	if (faults)
		return firstTouches(mib, bytes, rounds);
	if (give_back)
		return copyAfterGivingBack(mib, bytes, rounds);
	if (together)
		return faultsTogether(mib, bytes, rounds);
	if (adopt)
		return adoptPages(mib, bytes, rounds);
	if (move)
		printf("MiB %ld, moving a filled buffer's pages into a fresh one, against faulting it in + memcpy:", mib);
	else
		printf("MiB %ld, %s pages, first touch of each new buffer (not freed):", mib, kind);
	for (long r = 0; r < rounds; ++r) {
		char *buffer = fresh(bytes);
		if (huge)
			madvise(buffer, bytes, MADV_HUGEPAGE);
		const double seconds = populate(buffer, bytes);
		if (!move) {
			printf(" %.3f s (%.2f GB/s)", seconds, (double)bytes / seconds / 1e9);
			fflush(stdout);
			continue;
		}
		memset(buffer, 1, bytes);
		char *target = fresh(bytes), *copy = fresh(bytes);
		double start = now();
		if (mremap(buffer, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, target) != target) {
			perror("first_touch: mremap");
			return 1;
		}
		const double moving = now() - start;
		const double faulting = populate(copy, bytes);
		start = now();
		memcpy(copy, target, bytes);
		const double copying = now() - start;
		if (copy[bytes / 2] != 1 || target[bytes / 2] != 1)
			return 1;
		printf(" %.2f ms against %.2f + %.2f ms", moving * 1e3, faulting * 1e3, copying * 1e3);
		fflush(stdout);
	}
	printf("\n");
	return 0;
}
