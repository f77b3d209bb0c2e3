// SPDX-License-Identifier: Apache-2.0
// The iterations left that a poll carries (pcm_bridge/plan/remaining.h): what the real bridge's AgentCommands
// and the simulator's application both send, so that sweetspot weighs a resize over the same horizon in both.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "plan/remaining.h"

using namespace malleo::pcm;

TEST_CASE("an application that never said its iterations gives no horizon")
{
	CHECK(remainingAtProbe(-1, 0, 0) == -1);
	CHECK(remainingAtProbe(-1, 5, 40) == -1);
}

TEST_CASE("the count said at a probe goes down by one per probe since")
{
	// PCM_Remaining_iterations(60) at launch (probe 0): the simulator's application, fig14's 60 iterations.
	CHECK(remainingAtProbe(60, 0, 0) == 60);
	CHECK(remainingAtProbe(60, 0, 1) == 59);
	CHECK(remainingAtProbe(60, 0, 45) == 15);
	// Said again later (a solver that learnt it needs fewer steps): counted from that probe.
	CHECK(remainingAtProbe(20, 30, 30) == 20);
	CHECK(remainingAtProbe(20, 30, 37) == 13);
}

TEST_CASE("never below zero, and a probe before the one it was said at counts as that one")
{
	CHECK(remainingAtProbe(10, 0, 10) == 0);
	CHECK(remainingAtProbe(10, 0, 25) == 0); // the application ran on past what it said
	CHECK(remainingAtProbe(10, 8, 3) == 10); // a parked process's probe counter behind the coordinator's
	CHECK(remainingAtProbe(0, 0, 0) == 0);	 // the last iteration: nothing left to pay a resize back
}
