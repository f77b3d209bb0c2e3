// SPDX-License-Identifier: Apache-2.0
// Runs a redistribution schedule over MPI with nonblocking point-to-point calls, one step at a time.
#pragma once

#include <mpi.h>

#include "schedule.h"

namespace malleo::pcm {

struct ExecuteResult {
	int mpi_error = MPI_SUCCESS;  // the first MPI error seen; the old buffer is untouched whatever happens
	std::int64_t bytes_sent = 0;  // by this rank, local copies excluded
	std::int64_t bytes_pulled = 0;  // received by reading the sender's memory (process_vm_readv: between jobs)
	double seconds = 0.0;
};

// Every rank of `comm` calls this with the same schedule. `old_buffer` holds this rank's elements under the old
// layout (may be null when it held none), `new_buffer` has room for its elements under the new layout (may be null
// when it gets none). `element` is the MPI type of one element (a column of heat2d is a contiguous type of `rows`
// doubles). Never writes to `old_buffer`, so a failed reconfiguration keeps the data intact. Unless
// `prefault_new_buffer` is false (benchmarks compare), a destination of 8 MiB or more has its pages faulted in
// before the transfers (executor.cpp, prefault).
ExecuteResult execute(MPI_Comm comm, const Schedule& schedule, const void* old_buffer, void* new_buffer,
		MPI_Datatype element, int tag = 7300, bool prefault_new_buffer = true);

}  // namespace malleo::pcm
