// SPDX-License-Identifier: Apache-2.0
// Where a reconfiguration's time goes, as the coordinator sees it: agreement (the plan's broadcast and seed 000's
// vote, which in pool mode includes waking the parked joiners), spawn (spawn mode: MPI_Comm_spawn of the missing
// processes and their merge into the control communicator; zero when none was started), activation (bringing the
// new processes into one communicator with the others: MPI_Comm_create_group), redistribution (the
// manifest, the data's move, and the agreement on its outcome, which waits for the slowest transfer) and rebuild
// (the new active communicator). Reported by MALLEO_PCM_VERBOSE (one stderr line) and MALLEO_PCM_PHASES=FILE (one
// JSON line appended per completed operation, for bench/pcm_reconfigure.py).
#pragma once

#include <array>
#include <cstdint>

namespace malleo::pcm {

enum class Phase { agreement, spawn, activation, redistribution, rebuild };

class PhaseTimes
{
public:
	// At a probe: the clock of a possible operation starts here.
	void start();
	// The time since the last start() or mark() goes to `phase`.
	void mark(Phase phase);
	void report(const char *operation, std::int64_t iteration, std::size_t before, std::size_t after, bool verbose);

private:
	double last_ = 0.0;
	std::array<double, 5> seconds_{};
};

PhaseTimes &phaseTimes();

} // namespace malleo::pcm
