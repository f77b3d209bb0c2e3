// SPDX-License-Identifier: Apache-2.0
#pragma once

// Only the C API: the C++ bindings of either MPI would drag in symbols this library must not
// define.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdint>
#include <cstring>

namespace malleo::pmpi {

// Handles are pointers in Open MPI and ints in MPICH; tables key them by their bits.
template <typename Handle> inline uint64_t handleKey(Handle h)
{
	static_assert(sizeof(Handle) <= sizeof(uint64_t));
	uint64_t key = 0;
	std::memcpy(&key, &h, sizeof(h));
	return key;
}

} // namespace malleo::pmpi
