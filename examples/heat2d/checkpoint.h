/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stop-restart baseline the papers compare split and merge with (seeds 000 and 003): --checkpoint FILE
 * --checkpoint-at K gathers the grid through rank 0 into FILE at the top of iteration K and stops; --restart FILE,
 * relaunched on any number of processes, has rank 0 read it and scatter the columns, and continues from K. The
 * file: a header (magic, rows, columns, iteration; int64) and the columns in global order, in this machine's byte
 * order. Rank 0 prints how long each side took (bench/pcm_reconfigure.py reads it).
 */
#pragma once

struct checkpointing {
	const char *checkpoint;
	int checkpoint_at;
	const char *restart;
};

/* Gathers the grid on rank 0, which writes the checkpoint; then every process stops. Returns the exit code. */
int stop_at_checkpoint(const struct checkpointing *c, double *prevData, double *nextData, int xDim, int yDim,
		       int columns, int iteration);

/* Rank 0 reads the checkpoint and scatters its columns over the processes' blocks (prevData, xDim columns each).
 * Returns the iteration to continue from, or -1 on every process if the file is unusable (rank 0 says why). */
int restart_from_checkpoint(const struct checkpointing *c, double *prevData, int xDim, int yDim, int columns);
