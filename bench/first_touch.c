/* SPDX-License-Identifier: Apache-2.0 */
/* How fast this machine hands out fresh memory: allocates ROUNDS buffers of MIB MiB one after the other, never
 * freeing them, and times the first touch of each (one madvise(MADV_POPULATE_WRITE), as the redistribution's executor
 * does for a new buffer). On a VM that hands free memory back to its host (free page reporting), the first buffers
 * come from memory the guest freed recently and are fast, the later ones cost a host fault per page
 * (docs/performance.md, "Reconfiguration").
 *
 *	build/bench/first_touch [MIB [ROUNDS]]     (default 150 MiB, 8 rounds)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const long mib = argc > 1 ? atol(argv[1]) : 150;
	const long rounds = argc > 2 ? atol(argv[2]) : 8;
	if (mib < 1 || rounds < 1) {
		fprintf(stderr, "usage: first_touch [MIB [ROUNDS]] (positive integers)\n");
		return 2;
	}
	const size_t bytes = (size_t)mib << 20;
	const long page = sysconf(_SC_PAGESIZE);
	printf("MiB %ld, first touch of each new buffer (not freed):", mib);
	for (long r = 0; r < rounds; ++r) {
		void *buffer = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buffer == MAP_FAILED) {
			perror("first_touch: mmap");
			return 1;
		}
		const double start = now();
		if (madvise(buffer, bytes - bytes % (size_t)page, MADV_POPULATE_WRITE) != 0) {
			perror("first_touch: madvise(MADV_POPULATE_WRITE)");
			return 1;
		}
		const double seconds = now() - start;
		printf(" %.3f s (%.2f GB/s)", seconds, (double)bytes / seconds / 1e9);
		fflush(stdout);
	}
	printf("\n");
	return 0;
}
