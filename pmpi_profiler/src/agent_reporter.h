// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace malleo::pmpi {

struct ReporterSetup {
	std::string endpoint; // the agent's local endpoint
	std::string app;      // <program>-<job>: the same on every rank of the job
	int rank = 0;
	int size = 0;
	double interval = 1.0;	      // seconds between reports
	std::vector<uint8_t> sameHost; // per world rank: 1 when it runs on this host
};

// Starts the one reporter thread of this process: it registers with the agent, then sends the
// deltas every `interval` seconds. Nothing it does makes the application wait.
void startReporter(ReporterSetup setup);

// Sends the last deltas and `deregister`, waits a bounded time for the agent's acks, and joins the
// thread. Safe to call more than once, without a reporter, and in a forked child (which has none).
void stopReporter();

// What every later report says of this process (`active`): MALLEO_Set_active. True from the start; a change is
// reported at once, not at the next interval.
void setReportedActive(bool active);

} // namespace malleo::pmpi
