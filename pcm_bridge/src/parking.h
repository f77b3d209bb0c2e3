// SPDX-License-Identifier: Apache-2.0
// Waiting without CPU. A process that waits for a reconfiguration or for the end of the run must not sit in a
// blocking MPI call (ENVIRONMENT.md: 55-98 % of a core); it tests a nonblocking request and sleeps between tests,
// longer the longer it has waited, so a parked process costs well under 1 % of a core.
#pragma once

#include <mpi.h>

namespace malleo::pcm {

// Completes `request`, sleeping between tests (1 ms at first, up to `max_sleep_us`). Returns the MPI error code.
int waitSleeping(MPI_Request *request, MPI_Status *status, int max_sleep_us = 16000);

// As waitSleeping, but gives up after `seconds`: returns true when the request completed (it is then null).
bool waitSleepingFor(MPI_Request *request, MPI_Status *status, double seconds);

} // namespace malleo::pcm
