// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "rank_profile.h"

namespace malleo::pmpi {

struct ReportHeader {
	std::string app;
	std::string job;
	std::string mpiLibrary;
	const char *mode;
	const char *ended; // "MPI_Finalize", "MPI_Abort", "exit without MPI_Finalize"
	int worldSize;
	bool complete; // every rank of the job is in the report
};

// The JSON report (format in docs/pmpi-profiler.md) and the human summary of the same data.
void writeJson(std::FILE *out, const ReportHeader &header, const std::vector<RankProfile> &ranks);
void writeSummary(std::FILE *out, const ReportHeader &header,
		  const std::vector<RankProfile> &ranks);

} // namespace malleo::pmpi
