/* SPDX-License-Identifier: Apache-2.0 */
/* heat2d's command line (options.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

#define MAX_PACE 60000 /* a minute per iteration: anything longer is a typo */

static int parse_positive(const char *flag, const char *text, int *out)
{
	char *end = NULL;
	long value = strtol(text, &end, 10);
	if (!*text || *end || value < 1 || value > 100000000) {
		fprintf(stderr, "heat2d: %s %s: expected a positive integer\n", flag, text);
		return -1;
	}
	*out = (int)value;
	return 0;
}

static int parse_pace(const char *text, int *out)
{
	char *end = NULL;
	long value = strtol(text, &end, 10);
	if (!*text || *end || value < 0 || value > MAX_PACE) {
		fprintf(stderr, "heat2d: --pace %s: expected milliseconds from 0 to %d\n", text, MAX_PACE);
		return -1;
	}
	*out = (int)value;
	return 0;
}

static const char usage[] =
	"usage: heat2d [--rows R] [--columns C] [--iterations N] [--progress K] [--times] [--pace MS]\n"
	"              [--world pcm|mpi]\n"
	"              [--checkpoint FILE --checkpoint-at K] [--restart FILE]\n"
	"  --rows R, --columns C  grid size (default 64 x 64; 1024 rows of doubles = 128 columns per MiB)\n"
	"  --iterations N         Jacobi steps (default 100)\n"
	"  --progress K           print the iteration and the process count every K iterations (default: never)\n"
	"  --times                rank 0 prints each iteration's wall time, its probe (and any reconfiguration there)\n"
	"                         included: what a reconfiguration costs the iterations after it\n"
	"  --pace MS              every iteration lasts at least MS milliseconds, 0 to 60000 (default 0: off); the\n"
	"                         result is the same, the run just lasts a known time (demos, commands by hand)\n"
	"  --world pcm|mpi        compute on PCM_COMM_WORLD (default) or on MPI_COMM_WORLD (needs\n"
	"                         MALLEO_WORLD=malleable and libmalleo_pmpi preloaded)\n"
	"  --checkpoint FILE --checkpoint-at K  stop at iteration K with the grid written to FILE\n"
	"  --restart FILE         continue from FILE on the processes of this launch\n"
	"Reconfigured by MALLEO_FORCE or the local agent (malleo force; docs/pcm-api.md); prints the grid's checksum at the end.\n";

/* 0: go on; -1: bad options (said on stderr); 1: --help. */
static int parse_options(int argc, char **argv, struct options *o)
{
	o->rows = 64;
	o->columns = 64;
	o->iterations = 100;
	o->progress = 0;
	o->times = 0;
	o->pace = 0;
	o->world_mpi = 0;
	for (int i = 1; i < argc; ++i) {
		int *target = NULL;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
		if (!strcmp(argv[i], "--times")) {
			o->times = 1;
			continue;
		}
		if (!strcmp(argv[i], "--world")) {
			if (i + 1 >= argc || (strcmp(argv[i + 1], "pcm") && strcmp(argv[i + 1], "mpi"))) {
				fprintf(stderr, "heat2d: --world needs pcm or mpi\n");
				return -1;
			}
			o->world_mpi = !strcmp(argv[++i], "mpi");
			continue;
		}
		if (!strcmp(argv[i], "--pace")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "heat2d: --pace needs a value\n");
				return -1;
			}
			if (parse_pace(argv[++i], &o->pace))
				return -1;
			continue;
		}
		if (!strcmp(argv[i], "--rows"))
			target = &o->rows;
		else if (!strcmp(argv[i], "--columns"))
			target = &o->columns;
		else if (!strcmp(argv[i], "--iterations"))
			target = &o->iterations;
		else if (!strcmp(argv[i], "--progress"))
			target = &o->progress;
		else {
			fprintf(stderr, "heat2d: unknown option %s (--rows, --columns, --iterations, --progress, "
					"--times, --pace, --world)\n", argv[i]);
			return -1;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "heat2d: %s needs a value\n", argv[i]);
			return -1;
		}
		if (parse_positive(argv[i], argv[i + 1], target))
			return -1;
		++i;
	}
	if (o->rows < 3 || o->columns < 3) {
		fprintf(stderr, "heat2d: the grid needs at least 3 rows and 3 columns\n");
		return -1;
	}
	return 0;
}

/* Takes the checkpoint options out of argv, so parse_options sees only its own. */
static int take_checkpoint_options(int *argc, char **argv, struct checkpointing *c, int rank)
{
	int kept = 1, at = -1;
	memset(c, 0, sizeof *c);
	for (int i = 1; i < *argc; ++i) {
		const int ours = !strcmp(argv[i], "--checkpoint") || !strcmp(argv[i], "--checkpoint-at") ||
				 !strcmp(argv[i], "--restart");
		if (!ours) {
			argv[kept++] = argv[i];
			continue;
		}
		if (i + 1 >= *argc) {
			if (rank == 0)
				fprintf(stderr, "heat2d: %s needs a value\n", argv[i]);
			return -1;
		}
		if (!strcmp(argv[i], "--checkpoint"))
			c->checkpoint = argv[i + 1];
		else if (!strcmp(argv[i], "--restart"))
			c->restart = argv[i + 1];
		else if (parse_positive(argv[i], argv[i + 1], &at))
			return -1;
		++i;
	}
	*argc = kept;
	argv[kept] = NULL;
	c->checkpoint_at = at;
	if (!c->checkpoint != (at < 0)) {
		if (rank == 0)
			fprintf(stderr, "heat2d: --checkpoint FILE and --checkpoint-at K go together\n");
		return -1;
	}
	return 0;
}

int read_options(int *argc, char **argv, int rank, struct options *o, struct checkpointing *ck)
{
	int parsed = take_checkpoint_options(argc, argv, ck, rank);
	if (!parsed)
		parsed = parse_options(*argc, argv, o);
	if (parsed > 0 && rank == 0)
		fputs(usage, stdout);
	return parsed;
}
