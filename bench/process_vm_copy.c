/* SPDX-License-Identifier: Apache-2.0 */
/* What a copy between two processes costs next to memcpy: the redistribution's executor moves data between
 * processes on one host with process_vm_readv/writev (executor.cpp, DirectPeers), which the kernel does page by page
 * (pin the peer's page, copy, unpin), where memcpy streams. For each size, a child process holds a source buffer
 * of that size; the parent copies it whole into a touched buffer of its own with one process_vm_readv, and, next to
 * it in the same round, memcpys a local source of the same size into a touched buffer. Medians over the rounds, and
 * the ratio of the two (docs/performance.md, "Redistribution").
 *
 *	build/bench/process_vm_copy [ROUNDS [KIB ...]]     (default 25 rounds; 256 2048 10240 102400 KiB)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int byValue(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *values, int n)
{
	qsort(values, (size_t)n, sizeof *values, byValue);
	return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/* Returns 0 when every round copied the whole size, with the right bytes. */
static int measure(size_t bytes, int rounds)
{
	char *source = malloc(bytes), *local = malloc(bytes), *target = malloc(bytes);
	double *remote_s = calloc((size_t)rounds, sizeof(double)), *local_s = calloc((size_t)rounds, sizeof(double));
	if (!source || !local || !target || !remote_s || !local_s) {
		fprintf(stderr, "process_vm_copy: out of memory for %zu bytes\n", bytes);
		return 1;
	}
	memset(source, 0x5a, bytes);
	memset(local, 0x5a, bytes);
	memset(target, 0, bytes);
	/* The child's copy of `source` (its pages are its own once it writes them) is what the parent reads. */
	int ready[2];
	if (pipe(ready) != 0) {
		perror("process_vm_copy: pipe");
		return 1;
	}
	pid_t child = fork();
	if (child == 0) {
		memset(source, 0x3c, bytes);
		char byte = 1;
		if (write(ready[1], &byte, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char byte = 0;
	if (child < 0 || read(ready[0], &byte, 1) != 1) {
		fprintf(stderr, "process_vm_copy: the child holding the source did not start\n");
		return 1;
	}
	int status = 0;
	for (int r = 0; r < rounds && status == 0; ++r) {
		struct iovec mine = {target, bytes}, theirs = {source, bytes};
		double start = now();
		ssize_t got = process_vm_readv(child, &mine, 1, &theirs, 1, 0);
		remote_s[r] = now() - start;
		if (got != (ssize_t)bytes || target[bytes - 1] != 0x3c) {
			perror("process_vm_copy: process_vm_readv");
			status = 1;
		}
		start = now();
		memcpy(target, local, bytes);
		local_s[r] = now() - start;
		if (target[bytes / 2] != 0x5a)  /* read back, so the copy cannot be optimised away */
			status = 1;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	if (status == 0) {
		double remote = median(remote_s, rounds), copy = median(local_s, rounds);
		printf("| %zu | %.2f | %.2f | %.0f %% |\n", bytes >> 10, (double)bytes / remote / 1e9,
		       (double)bytes / copy / 1e9, 100.0 * copy / remote);
	}
	free(source);
	free(local);
	free(target);
	free(remote_s);
	free(local_s);
	return status;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 25;
	if (rounds < 1) {
		fprintf(stderr, "usage: process_vm_copy [ROUNDS [KIB ...]] (ROUNDS a positive number)\n");
		return 2;
	}
	size_t kib[64] = {256, 2048, 10240, 102400};
	int sizes = 4;
	if (argc > 2) {
		sizes = argc - 2 < 64 ? argc - 2 : 64;
		for (int i = 0; i < sizes; ++i) {
			char *end = NULL;
			kib[i] = strtoull(argv[i + 2], &end, 10);
			if (kib[i] == 0 || *end != '\0') {
				fprintf(stderr, "process_vm_copy: '%s' is not a size in KiB\n", argv[i + 2]);
				return 2;
			}
		}
	}
	printf("| KiB | process_vm_readv GB/s | memcpy GB/s | process_vm_readv / memcpy |\n| --- | --- | --- | --- |\n");
	for (int i = 0; i < sizes; ++i)
		if (measure(kib[i] << 10, rounds) != 0)
			return 1;
	return 0;
}
