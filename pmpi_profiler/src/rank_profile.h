// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "thread_counters.h"

namespace malleo::pmpi {

// One rank's counters summed over its threads and converted to nanoseconds: what a report is made
// of. It travels to rank 0 as a flat array of uint64_t so one MPI_Gatherv moves it.
struct RankProfile {
	int rank = 0;
	std::string host;
	uint64_t pid = 0;
	uint64_t threads = 0;
	uint64_t wallNs = 0; // library load to the report
	uint64_t mpiNs = 0;  // in MPI, MPI_Init included
	// MPI_Init's return to the report (MPI_Finalize's call, or the rank's end)
	uint64_t appNs = 0;
	uint64_t fnCalls[kFunctionCount] = {};
	uint64_t fnNs[kFunctionCount] = {};
	uint64_t fnBytes[kFunctionCount] = {};
	uint64_t histogram[kOpKinds][kHistogramBins] = {};
	std::vector<uint64_t> peerMessages; // world size + 1, empty unless MALLEO_PROFILE=full
	std::vector<uint64_t> peerBytes;
	std::vector<uint64_t> iterationNs;
	std::vector<uint64_t> iterationMpiNs;

	// MPI_Init's (or MPI_Init_thread's) time, and the time in MPI after it: kept apart because
	// starting MPI (and the launcher's wire-up) can outweigh the whole run's communication.
	uint64_t initNs() const;
	uint64_t appMpiNs() const { return mpiNs > initNs() ? mpiNs - initNs() : 0; }

	static RankProfile collect();
	std::vector<uint64_t> pack() const;
	static RankProfile unpack(const uint64_t *data, size_t size);
};

} // namespace malleo::pmpi
