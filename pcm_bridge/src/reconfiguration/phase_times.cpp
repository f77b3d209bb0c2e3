// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/phase_times.h"

#include <mpi.h>

#include <algorithm>
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
	overlappedSeconds_ = 0.0;
	overlappedProbes_ = 0;
	overlappedInterval_ = 0.0;
	keptInPlace_ = movedAsPages_ = prepared_ = takenAsPages_ = delivered_ = 0;
	last_ = MPI_Wtime();
	probeStarts_[probesSeen_++ % probeStarts_.size()] = last_;
}

double PhaseTimes::probeInterval() const
{
	const std::size_t known = std::min(probesSeen_, probeStarts_.size());
	if (known < 2)
		return 0.0;
	const double newest = probeStarts_[(probesSeen_ - 1) % probeStarts_.size()];
	const double oldest = probeStarts_[(probesSeen_ - known) % probeStarts_.size()];
	return (newest - oldest) / static_cast<double>(known - 1);
}

void PhaseTimes::overlapped(double seconds, std::int64_t probes, double interval)
{
	overlappedSeconds_ = seconds;
	overlappedProbes_ = probes;
	overlappedInterval_ = interval;
}

void PhaseTimes::kept(std::int64_t in_place, std::int64_t as_pages)
{
	keptInPlace_ += in_place;
	movedAsPages_ += as_pages;
}

void PhaseTimes::prepared(std::int64_t bytes)
{
	prepared_ += bytes;
}

void PhaseTimes::taken(std::int64_t bytes, std::int64_t delivered)
{
	takenAsPages_ += bytes;
	delivered_ += delivered;
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
	if (verbose) {
		char background[160] = "";
		if (overlappedProbes_ > 0)
			std::snprintf(background, sizeof background,
				      " (processes started in the background: %.6f s over %lld probes of %.6f s before)",
				      overlappedSeconds_, static_cast<long long>(overlappedProbes_), overlappedInterval_);
		std::fprintf(stderr,
			     "malleo-pcm: %s at iteration %lld took %.6f s: agreement %.6f, spawn %.6f, activation %.6f, "
			     "redistribution %.6f, rebuild %.6f%s\n",
			     operation, static_cast<long long>(iteration), total, seconds_[0], seconds_[1], seconds_[2],
			     seconds_[3], seconds_[4], background);
	}
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
		     "\"rebuild\": %.9f, \"spawn_background\": %.9f, \"probes_overlapped\": %lld, "
		     "\"probe_interval_before\": %.9f, \"kept_in_place\": %lld, \"moved_as_pages\": %lld, "
		     "\"joiners_prepared\": %lld, \"taken_as_pages\": %lld, \"delivered\": %lld}\n",
		     operation, static_cast<long long>(iteration), before, after, total, seconds_[0], seconds_[1],
		     seconds_[2], seconds_[3], seconds_[4], overlappedSeconds_, static_cast<long long>(overlappedProbes_),
		     overlappedInterval_, static_cast<long long>(keptInPlace_), static_cast<long long>(movedAsPages_),
		     static_cast<long long>(prepared_), static_cast<long long>(takenAsPages_),
		     static_cast<long long>(delivered_));
	std::fclose(file);
}

} // namespace malleo::pcm
