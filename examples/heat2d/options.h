/* SPDX-License-Identifier: Apache-2.0 */
/* heat2d's command line (its usage in options.c). */
#pragma once

#include "checkpoint.h"

struct options {
	int rows;
	int columns;
	int iterations;
	int progress;
	int times; /* --times: rank 0 prints each iteration's wall time */
	int pace; /* --pace: milliseconds per iteration at least, 0 = off */
	int world_mpi; /* --world mpi */
};

/* The options into `o`, the checkpoint ones (taken out of argv) into `ck`. 0: go on; -1: bad options (said on
 * stderr); 1: --help (rank 0 printed the usage). */
int read_options(int *argc, char **argv, int rank, struct options *o, struct checkpointing *ck);
