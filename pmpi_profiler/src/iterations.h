// SPDX-License-Identifier: Apache-2.0
#pragma once

// The iterations of the application's main loop, as two sources mark them: the program itself
// (MALLEO_Iteration_mark) and the PCM bridge at each of its probes (MALLEO_Iteration_probe). The
// program's marks win: once it has marked one iteration, only its marks count, from MPI_Init's
// return on, as they would without the bridge.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace malleo::pmpi {

struct IterationPoint {
	uint64_t ticks;	   // the TSC
	uint64_t mpiTicks; // the marking thread's time in MPI so far
};

struct IterationSpan {
	IterationPoint start;
	IterationPoint end;
};

// MPI_Init has returned: the program's first iteration starts.
void startIterations();
// MALLEO_Set_active: a process that waits parked is in no iteration; one activated again starts
// one.
void setIterationsActive(bool active);

// Every iteration recorded, of the source that counts.
std::vector<IterationSpan> recordedIterations();

// Where the agent reporter has read up to.
struct IterationCursor {
	bool program = false; // which source it was reading
	size_t next = 0;
};
// The iterations recorded since `cursor`, which moves past them. When the program's marks take over
// from the bridge's, the cursor starts over on the program's.
std::vector<IterationSpan> iterationsSince(IterationCursor &cursor);

} // namespace malleo::pmpi
