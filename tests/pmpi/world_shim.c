// SPDX-License-Identifier: Apache-2.0
// Lets world.F90 call MALLEO_Set_world through the C API (weak: the program still links without the
// library), the way the PCM bridge would.
#include <stdio.h>

#include <mpi.h>

#include "malleo_pmpi.h"

void world_shim_set_(const MPI_Fint *comm)
{
	if (!MALLEO_Set_world) {
		printf("FAIL: MALLEO_Set_world is missing (run with libmalleo_pmpi preloaded)\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MALLEO_Set_world(MPI_Comm_f2c(*comm));
}
