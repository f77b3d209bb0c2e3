// SPDX-License-Identifier: Apache-2.0
#include "job_report.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "mpi_include.h"
#include "process_state.h"
#include "rank_profile.h"
#include "report_writer.h"

namespace malleo::pmpi {

namespace {

constexpr int kHostChars = 64;

const char *modeName()
{
	return gMode == Mode::Full ? "full" : gMode == Mode::Summary ? "summary" : "off";
}

// The launcher's job id where it exports one, so the ranks of one job agree on the name; else this
// process's pid (rank 0 writes the job report, so its pid names the job).
std::string jobId()
{
	std::string id = launcherJobId();
	return id.empty() ? std::to_string(getpid()) : id;
}

std::string mpiLibrary()
{
	char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
	int length = 0;
	PMPI_Get_library_version(text, &length);
	std::string s(text, size_t(length > 0 ? length : 0));
	const size_t eol = s.find_first_of("\n\r");
	s = s.substr(0, eol);
	while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\0'))
		s.pop_back();
	return s;
}

ReportHeader header(const char *ended, bool complete)
{
	return ReportHeader{program_invocation_short_name,
			    jobId(),
			    mpiLibrary(),
			    modeName(),
			    ended,
			    worldSize(),
			    complete};
}

// Whether MPI_Comm_spawn started this job, known at MPI_Init: a malleable program frees its parent communicator
// once merged with it (the PCM bridge does), and MPI_Comm_get_parent says MPI_COMM_NULL from then on.
bool gSpawned = false;

// malleo-profile-<app>-<job>, where <job> is MALLEO_JOB_TAG when `malleo run` set one (so that it knows which file
// its job wrote, where the launcher's id is not known before the launch), else the launcher's job id. A job started
// by MPI_Comm_spawn inherits the tag from the launch's environment: its own id follows, or it would overwrite the
// launch's report.
std::string reportStem(const ReportHeader &h)
{
	const char *tag = std::getenv("MALLEO_JOB_TAG");
	if (!tag || !*tag || std::strchr(tag, '/'))
		return "malleo-profile-" + h.app + "-" + h.job;
	const std::string stem = "malleo-profile-" + h.app + "-" + tag;
	return gSpawned ? stem + ".spawn" + h.job : stem;
}

void writeFiles(const std::string &stem, const ReportHeader &h,
		const std::vector<RankProfile> &ranks)
{
	const char *dir = std::getenv("MALLEO_PROFILE_DIR");
	const std::string base = std::string(dir && *dir ? dir : ".") + "/" + stem;
	std::FILE *json = std::fopen((base + ".json").c_str(), "w");
	std::FILE *text = std::fopen((base + ".txt").c_str(), "w");
	if (!json || !text) {
		std::fprintf(stderr, "malleo-pmpi: cannot write %s.json/.txt: %s\n", base.c_str(),
			     std::strerror(errno));
	} else {
		writeJson(json, h, ranks);
		writeSummary(text, h, ranks);
		// `malleo run` names the reports itself, once, after the launcher ends: this line would say it twice.
		const char *announce = std::getenv("MALLEO_PROFILE_ANNOUNCE");
		if (!announce || std::strcmp(announce, "off") != 0)
			std::fprintf(
			    stderr,
			    "malleo-pmpi: profile of %zu rank(s) written to %s.json (summary: %s.txt)\n",
			    ranks.size(), base.c_str(), base.c_str());
	}
	if (json)
		std::fclose(json);
	if (text)
		std::fclose(text);
}

} // namespace

void noteJobOrigin()
{
	MPI_Comm parent = MPI_COMM_NULL;
	PMPI_Comm_get_parent(&parent);
	gSpawned = parent != MPI_COMM_NULL;
}

std::string launcherJobId()
{
	for (const char *var :
	     {"OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "PBS_JOBID", "PMI_JOBID"}) {
		const char *value = std::getenv(var);
		if (value && *value) {
			std::string id = value;
			const char *step = std::getenv("SLURM_STEP_ID");
			if (!std::strcmp(var, "SLURM_JOB_ID") && step)
				id += std::string(".") + step;
			return id;
		}
	}
	return {};
}

void writeJobReport()
{
	RankProfile mine = RankProfile::collect();
	const std::vector<uint64_t> packed = mine.pack();
	char host[kHostChars] = {};
	std::strncpy(host, mine.host.c_str(), kHostChars - 1);

	const int size = worldSize(), rank = worldRank();
	const int count = int(packed.size());
	std::vector<int> counts(size_t(rank == 0 ? size : 0)), displs(counts.size());
	std::vector<char> hosts(size_t(rank == 0 ? size * kHostChars : 0));
	PMPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
	PMPI_Gather(host, kHostChars, MPI_CHAR, hosts.data(), kHostChars, MPI_CHAR, 0,
		    MPI_COMM_WORLD);
	int total = 0;
	for (size_t i = 0; i < counts.size(); ++i) {
		displs[i] = total;
		total += counts[i];
	}
	std::vector<uint64_t> all(static_cast<size_t>(total));
	PMPI_Gatherv(packed.data(), count, MPI_UINT64_T, all.data(), counts.data(), displs.data(),
		     MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (rank != 0)
		return;

	std::vector<RankProfile> ranks;
	for (int r = 0; r < size; ++r) {
		ranks.push_back(
		    RankProfile::unpack(all.data() + displs[size_t(r)], size_t(counts[size_t(r)])));
		ranks.back().host.assign(&hosts[size_t(r * kHostChars)],
					 strnlen(&hosts[size_t(r * kHostChars)], kHostChars));
	}
	const ReportHeader h = header("MPI_Finalize", true);
	writeFiles(reportStem(h), h, ranks);
}

void writeRankReport(const char *ended)
{
	const ReportHeader h = header(ended, false);
	const std::vector<RankProfile> ranks{RankProfile::collect()};
	writeFiles(reportStem(h) + ".rank" + std::to_string(worldRank()), h, ranks);
}

} // namespace malleo::pmpi
