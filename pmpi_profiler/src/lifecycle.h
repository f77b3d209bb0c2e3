// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace malleo::pmpi {

// Called by the generated wrappers of MPI_Init (after PMPI_Init), MPI_Finalize (before
// PMPI_Finalize) and MPI_Abort; they start and end everything else, so this sits above every
// other file. The state the rest reads lives in process_state.h.
void onInit();
void onFinalize();
void onAbort();

} // namespace malleo::pmpi
