// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace malleo::pmpi {

// Where the profile reaches the local agent (MALLEO_AGENT; docs/pmpi-profiler.md, "The agent").
// agentInit runs in the MPI_Init wrapper after PMPI_Init, on every rank of MPI_COMM_WORLD: it
// makes one collective call (which ranks share a host), then starts the reporter thread when an
// agent endpoint is configured. agentFinalDelta runs in the MPI_Finalize wrapper, before the job
// report. Neither waits on the agent. Iteration marks need no hook: the reporter reads them when it
// reports.
void agentInit();
void agentFinalDelta();

} // namespace malleo::pmpi
