// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

#include "wrapper_support.h"

namespace malleo::pmpi {

// The Fortran wrappers pass the call on to the MPI's own Fortran PMPI entry (pmpi_send_ etc.),
// which converts the handles and the Fortran sentinels (MPI_IN_PLACE, MPI_STATUS_IGNORE) exactly as
// the MPI expects; we only read converted copies for the counters. Looked up at first use, so a C
// program never loads the Fortran library.
void *resolveFortranEntry(const char *name)
{
	void *entry = dlsym(RTLD_NEXT, name);
	if (!entry) {
		std::fprintf(stderr, "malleo-pmpi: the MPI library has no Fortran entry %s\n",
			     name);
		std::abort();
	}
	return entry;
}

// Open MPI's Fortran MPI_IN_PLACE is the address of a common block.
bool isFortranInPlace(const void *buffer)
{
	static const void *const inPlace[] = {
	    dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_"),
	    dlsym(RTLD_DEFAULT, "mpi_fortran_in_place"),
	    dlsym(RTLD_DEFAULT, "mpi_fortran_in_place__"),
	    dlsym(RTLD_DEFAULT, "MPI_FORTRAN_IN_PLACE"),
	};
	for (const void *p : inPlace)
		if (p && p == buffer)
			return true;
	return false;
}

} // namespace malleo::pmpi
