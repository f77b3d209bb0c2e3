// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/world_publisher.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

// Declared weak there: the bridge runs with or without the profiler preloaded.
#include "malleo_pmpi.h"

namespace malleo::pcm {

namespace {

bool gPublish = false;

} // namespace

void configureWorldPublisher(bool report)
{
	gPublish = false;
	const char *mode = std::getenv("MALLEO_WORLD");
	if (!mode || !*mode || std::strcmp(mode, "fixed") == 0)
		return;
	if (std::strcmp(mode, "malleable") != 0) {
		if (report)
			std::fprintf(stderr, "malleo-pcm: MALLEO_WORLD=%s is not malleable or fixed; using fixed\n", mode);
		return;
	}
	if (!MALLEO_Set_world) {
		if (report)
			std::fprintf(stderr, "malleo-pcm: MALLEO_WORLD=malleable but libmalleo_pmpi is not preloaded: "
					     "MPI_COMM_WORLD stays the launch's world\n");
		return;
	}
	gPublish = true;
}

void publishActive(bool active)
{
	if (MALLEO_Set_active)
		MALLEO_Set_active(active ? 1 : 0);
}

void publishProbe()
{
	if (MALLEO_Iteration_probe)
		MALLEO_Iteration_probe();
}

void publishWorld(MPI_Comm world)
{
	if (gPublish)
		MALLEO_Set_world(world);
}

} // namespace malleo::pcm
