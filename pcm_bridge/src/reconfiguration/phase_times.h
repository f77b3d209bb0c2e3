// SPDX-License-Identifier: Apache-2.0
// Where a reconfiguration's time goes, as the coordinator sees it: agreement (the plan's broadcast and seed 000's
// vote, which in pool mode includes waking the parked joiners), spawn (spawn mode: MPI_Comm_spawn of the missing
// processes and their merge into the control communicator; zero when none was started), activation (bringing the
// new processes into one communicator with the others: MPI_Comm_create_group), redistribution (the
// manifest, the data's move, and the agreement on its outcome, which waits for the slowest transfer) and rebuild
// (the new active communicator). Reported by MALLEO_PCM_VERBOSE (one stderr line) and MALLEO_PCM_PHASES=FILE (one
// JSON line appended per completed operation, for bench/pcm_reconfigure.py). A spawn in the background
// (MALLEO_PCM_SPAWN=background) is reported apart, as spawn_background and the probes it overlapped; the data the
// coordinator kept without copying it, as kept_in_place and moved_as_pages; what all processes took over from
// shared blocks, as taken_as_pages; what the executor delivered, as delivered.
#pragma once

#include <array>
#include <cstdint>

namespace malleo::pcm {

enum class Phase { Agreement, Spawn, Activation, Redistribution, Rebuild };

class PhaseTimes
{
public:
	// At a probe: the clock of a possible operation starts here.
	void start();
	// The time since the last start() or mark() goes to `phase`.
	void mark(Phase phase);
	// The mean time between the last probes (up to 8 intervals; 0 before the second probe): an iteration's length.
	double probeInterval() const;
	// A background spawn of this operation took `seconds` while the application went on for `probes` probes,
	// whose length before it was `interval`: reported beside the phases, not in them (the operation did not wait
	// for it); what the iterations lost meanwhile is seconds - probes * interval.
	void overlapped(double seconds, std::int64_t probes, double interval);
	// This process kept `in_place` bytes of its elements in its old buffer and moved `as_pages` bytes into its
	// new one by their pages (page_move.h) instead of copying them: reported as kept_in_place and moved_as_pages.
	void kept(std::int64_t in_place, std::int64_t as_pages);
	// The joiners had `bytes` of their new buffers allocated and faulted in while they started (spawn.cpp):
	// reported as joiners_prepared.
	void prepared(std::int64_t bytes);
	// The processes took `bytes` of their new elements over by mapping the pages they were in (page_adoption.h),
	// and the executor delivered `delivered` bytes into their new buffers (by message, copy or page move; not what
	// stayed in place): reported as taken_as_pages and delivered.
	void taken(std::int64_t bytes, std::int64_t delivered);
	void report(const char *operation, std::int64_t iteration, std::size_t before, std::size_t after, bool verbose);

private:
	double last_ = 0.0;
	std::array<double, 5> seconds_{};
	double overlappedSeconds_ = 0.0;
	std::int64_t overlappedProbes_ = 0;
	double overlappedInterval_ = 0.0;
	std::int64_t keptInPlace_ = 0;
	std::int64_t movedAsPages_ = 0;
	std::int64_t prepared_ = 0;
	std::int64_t takenAsPages_ = 0;
	std::int64_t delivered_ = 0;
	std::array<double, 9> probeStarts_{};  // a ring of the last probes' start times
	std::size_t probesSeen_ = 0;
};

PhaseTimes &phaseTimes();

} // namespace malleo::pcm
