// SPDX-License-Identifier: Apache-2.0
#include "world_substitution.h"

#include <cstdio>

#include "malleo_pmpi.h"
#include "process_state.h"

namespace malleo::pmpi {

MPI_Comm gWorld = MPI_COMM_NULL;
MPI_Fint gWorldFortran = 0;
bool gBypass = false;

namespace {
MPI_Fint gRealWorldFortran = 0;
}

MPI_Fint currentWorldFortran(MPI_Fint comm)
{
	return comm == gRealWorldFortran && gWorld != MPI_COMM_NULL ? gWorldFortran : comm;
}

void updateBypass()
{
	gBypass = profilingOff() && gWorld == MPI_COMM_NULL;
}

} // namespace malleo::pmpi

using namespace malleo::pmpi;

extern "C" int MALLEO_Set_world(MPI_Comm world)
{
	if (world == MPI_COMM_WORLD)
		world = MPI_COMM_NULL; // substituting the world for itself is no substitution
	if (world != MPI_COMM_NULL) {
		int inter = 0;
		if (PMPI_Comm_test_inter(world, &inter) != MPI_SUCCESS || inter) {
			std::fprintf(stderr, "malleo-pmpi: MALLEO_Set_world: not an intracommunicator; "
					     "MPI_COMM_WORLD is left as it was\n");
			return MPI_ERR_COMM;
		}
	}
	gRealWorldFortran = PMPI_Comm_c2f(MPI_COMM_WORLD);
	gWorldFortran = world == MPI_COMM_NULL ? gRealWorldFortran : PMPI_Comm_c2f(world);
	gWorld = world;
	updateBypass();
	return MPI_SUCCESS;
}

// Fortran: CALL MALLEO_SET_WORLD(COMM, IERROR), COMM = MPI_COMM_NULL to stop substituting.
extern "C" __attribute__((visibility("default"))) void malleo_set_world_(const MPI_Fint *comm, MPI_Fint *ierr)
{
	const int rc = MALLEO_Set_world(PMPI_Comm_f2c(*comm));
	if (ierr)
		*ierr = rc;
}
extern "C" __attribute__((visibility("default"))) void malleo_set_world(const MPI_Fint *, MPI_Fint *) __attribute__((alias("malleo_set_world_")));
extern "C" __attribute__((visibility("default"))) void malleo_set_world__(const MPI_Fint *, MPI_Fint *) __attribute__((alias("malleo_set_world_")));
