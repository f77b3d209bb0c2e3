// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace malleo::pmpi {

// Where the profile deltas will go to the local agent (MALLEO_AGENT). Called off the hot path: at
// each iteration mark and once before the final report. Sending must never block the application;
// an unreachable agent is skipped. Not implemented yet: both are no-ops.
void agentIterationDelta();
void agentFinalDelta();

} // namespace malleo::pmpi
