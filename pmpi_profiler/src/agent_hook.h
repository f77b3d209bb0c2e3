// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace malleo::pmpi {

// Where the profile reaches the local agent (MALLEO_AGENT; docs/pmpi-profiler.md, "The agent").
// agentInit runs in the MPI_Init wrapper after PMPI_Init, on every rank of MPI_COMM_WORLD: it
// makes one collective call (which ranks share a host), then starts the reporter thread when an
// agent endpoint is configured. agentIterationDelta runs at each iteration mark; agentFinalDelta
// in the MPI_Finalize wrapper, before the job report. None of them waits on the agent.
void agentInit();
void agentIterationDelta();
void agentFinalDelta();

} // namespace malleo::pmpi
