// SPDX-License-Identifier: Apache-2.0
// A redistribution's transfers between shared blocks (shared_pages.h) of processes on one host, carried out by
// mapping the sender's pages into the receiver's new block instead of copying them: no byte is copied and no page
// faulted in, where into fresh private memory every page costs a first touch (docs/performance.md).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "redistribution/schedule.h"
#include "memory/shared_pages.h"

namespace malleo::pcm {

// Collective over `comm` (every rank, the same schedule), before execute(). `old_elements` holds this rank's
// `old_count` elements of `element_bytes` under the old layout and `new_elements` has room for its elements under the
// new one (either may be null). A transfer is taken over when its receiver's new elements and its sender's old ones
// lie in shared blocks, on whole pages (`element_bytes` a multiple of the page size), on one host, and the receiver
// can open the sender's files; the ranks agree on which in one reduction. The receiver maps those pages into `taken`
// (pending until taken.keep(), once every rank knows the redistribution succeeded) and the sender gives them away
// there. `rest` is the schedule of the other transfers, for execute() and finishLocal(). Returns MPI_SUCCESS, the
// error of an MPI call, or MPI_ERR_OTHER when this rank could not map pages it agreed to take: the redistribution
// must then fail (its old buffers are untouched).
int takePages(MPI_Comm comm, int rank, const Schedule& schedule, const void* old_elements, std::int64_t old_count,
	      void* new_elements, std::int64_t new_count, std::size_t element_bytes, TakenPages& taken, Schedule& rest);

}  // namespace malleo::pcm
