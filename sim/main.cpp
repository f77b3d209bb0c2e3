// SPDX-License-Identifier: Apache-2.0
// malleo-sim: the simulator on its own; `malleo sim` calls the same function.
#include "sim_command.h"

int main(int argc, char **argv)
{
	return malleo::sim::simCommand(argc, argv);
}
