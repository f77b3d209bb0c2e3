// SPDX-License-Identifier: Apache-2.0
#include "phase_times.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace malleo::pcm {

PhaseTimes &phaseTimes()
{
	static PhaseTimes times;
	return times;
}

void PhaseTimes::start()
{
	seconds_ = {};
	last_ = MPI_Wtime();
}

void PhaseTimes::mark(Phase phase)
{
	const double now = MPI_Wtime();
	seconds_[static_cast<std::size_t>(phase)] += now - last_;
	last_ = now;
}

void PhaseTimes::report(const char *operation, std::int64_t iteration, std::size_t before, std::size_t after,
			bool verbose)
{
	double total = 0.0;
	for (double seconds : seconds_)
		total += seconds;
	if (verbose)
		std::fprintf(stderr,
			     "malleo-pcm: %s at iteration %lld took %.6f s: agreement %.6f, spawn %.6f, activation %.6f, "
			     "redistribution %.6f, rebuild %.6f\n",
			     operation, static_cast<long long>(iteration), total, seconds_[0], seconds_[1], seconds_[2],
			     seconds_[3], seconds_[4]);
	const char *path = std::getenv("MALLEO_PCM_PHASES");
	if (!path || !*path)
		return;
	// Appending one short line with one fprintf keeps lines whole even when several runs share the file.
	std::FILE *file = std::fopen(path, "a");
	if (!file) {
		std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_PHASES=%s cannot be opened; phases not recorded\n", path);
		return;
	}
	std::fprintf(file,
		     "{\"operation\": \"%s\", \"iteration\": %lld, \"before\": %zu, \"after\": %zu, \"total\": %.9f, "
		     "\"agreement\": %.9f, \"spawn\": %.9f, \"activation\": %.9f, \"redistribution\": %.9f, "
		     "\"rebuild\": %.9f}\n",
		     operation, static_cast<long long>(iteration), before, after, total, seconds_[0], seconds_[1],
		     seconds_[2], seconds_[3], seconds_[4]);
	std::fclose(file);
}

} // namespace malleo::pcm
