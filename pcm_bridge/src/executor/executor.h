// SPDX-License-Identifier: Apache-2.0
// Runs a redistribution schedule over MPI with nonblocking point-to-point calls, one step at a time.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "redistribution/schedule.h"

namespace malleo::pcm {

struct ExecuteResult {
	int mpiError = MPI_SUCCESS;  // the first MPI error seen; the old buffer is untouched whatever happens
	std::int64_t bytesSent = 0;  // by this rank, local copies excluded
	std::int64_t bytesDirect = 0;  // copied by this rank straight between two processes' memories (executor.cpp)
	double seconds = 0.0;
};

struct ExecuteOptions {
	int tag = 7300;
	// Fault in the pages of a destination of 64 KiB or more before the transfers (executor.cpp, prefault);
	// benchmarks turn it off to compare.
	bool prefaultNewBuffer = true;
	// Leave this rank's local transfers (its elements that stay with it) to finishLocal(), which the caller runs
	// once every rank knows the redistribution succeeded. Needs a contiguous element type.
	bool deferLocal = false;
	// The elements this rank holds in old_buffer: a new buffer that is the old one may receive from other ranks
	// past them, into room it has (keepsInPlace). INT64_MAX: it may receive nothing from others.
	std::int64_t held = INT64_MAX;
};

// Every rank of `comm` calls this with the same schedule, handing `comm` over for the call: no other message may be
// in flight on it, and its error handler must return errors (MPI_ERRORS_RETURN); every message execute() posts has
// completed when it returns, failed or not, so the caller can go on using it. `old_buffer` holds this rank's elements under the old layout
// (may be null when it held none), `new_buffer` has room for its elements under the new layout (may be null when it
// gets none). `element` is the MPI type of one element (a column of heat2d is a contiguous type of `rows` doubles).
// Never writes over the elements of `old_buffer`, so a failed reconfiguration keeps the data intact. `new_buffer` may
// be `old_buffer` itself when every element this rank gets under the new layout is one it already holds at the same
// offset (a process of a split that keeps the start of its block), or one that lands past the `options.held` elements
// it holds (room the buffer has): those elements stay, nothing is copied or faulted in for them, and any other transfer
// into such a buffer fails before anything moves (MPI_ERR_BUFFER).
ExecuteResult execute(MPI_Comm comm, const Schedule& schedule, const void* old_buffer, void* new_buffer,
		MPI_Datatype element, const ExecuteOptions& options = {});

// The local transfers of `rank` that execute() left (ExecuteOptions::deferLocal), `element_bytes` per element:
// copies them into `new_buffer`, moving whole pages out of `old_buffer` instead where page_move.h allows, so the
// caller must be done with `old_buffer` (it is discarded after a successful reconfiguration). Returns the bytes
// moved as pages.
std::int64_t finishLocal(const Schedule& schedule, int rank, void* old_buffer, void* new_buffer,
			 std::size_t element_bytes);

}  // namespace malleo::pcm
