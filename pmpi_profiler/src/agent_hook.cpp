// SPDX-License-Identifier: Apache-2.0
#include "agent_hook.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include <malleo/run_dir.h>
#include <malleo/wire.h>

#include "agent_reporter.h"
#include "iterations.h"
#include "job_report.h"
#include "malleo_pmpi.h"
#include "mpi_include.h"
#include "process_state.h"

namespace malleo::pmpi {

namespace {

// The id this process registers with (MALLEO_App_id) and the agent it reports to (MALLEO_Agent_endpoint): the PCM
// bridge polls that agent under that id. Written once in MPI_Init, read after it.
char gAppId[kMaxIdLength + 1] = {};
std::string gAgentEndpoint;

uint64_t hostHash()
{
	char host[256] = {};
	gethostname(host, sizeof(host) - 1);
	uint64_t h = 1469598103934665603ull; // FNV-1a
	for (const char *c = host; *c; ++c)
		h = (h ^ uint8_t(*c)) * 1099511628211ull;
	return h;
}

// MALLEO_AGENT when set (empty, `off` or `none`: no reporting); else the default endpoint, but
// only when its socket exists, so a machine without an agent gets no thread at all.
std::string agentEndpoint()
{
	const char *value = std::getenv("MALLEO_AGENT");
	if (value)
		return !*value || !std::strcmp(value, "off") || !std::strcmp(value, "none") ? "" : value;
	const std::string socket = defaultAgentSocket();
	if (!socket.empty() && access(socket.c_str(), F_OK) == 0)
		return "ipc://" + socket;
	return {};
}

double reportInterval()
{
	const char *value = std::getenv("MALLEO_REPORT_INTERVAL");
	if (!value || !*value)
		return 1.0;
	char *end = nullptr;
	const double seconds = std::strtod(value, &end);
	if (*end || !(seconds >= 0.05 && seconds <= 3600)) {
		std::fprintf(stderr,
			     "malleo-pmpi: MALLEO_REPORT_INTERVAL=%s is not a number of seconds in "
			     "[0.05, 3600]; using 1\n",
			     value);
		return 1.0;
	}
	return seconds;
}

// <program>-<job>, the name of the job report too. MPICH's hydra exports no job id, so the ranks
// take rank 0's pid, as the report does.
std::string appId(uint64_t rank0Pid)
{
	std::string job = launcherJobId();
	if (job.empty())
		job = std::to_string(rank0Pid);
	job = job.substr(0, kMaxIdLength / 2);
	const std::string name = program_invocation_short_name;
	std::string id = name.substr(0, kMaxIdLength - job.size() - 1) + "-" + job;
	// An agent refuses ids outside its character set (<malleo/wire.h>): a program named "a b" registers as "a_b".
	for (char &c : id)
		if (!isIdChar(c))
			c = '_';
	return id;
}

} // namespace

void agentInit()
{
	// Collective, so every rank makes it whether or not it will report: an agent may be reachable
	// on some hosts and not on others.
	const int size = worldSize(), rank = worldRank();
	const uint64_t mine[2] = {hostHash(), uint64_t(getpid())};
	std::vector<uint64_t> all(2 * size_t(size));
	if (PMPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD) !=
	    MPI_SUCCESS)
		return;

	// A process the PCM bridge spawned is an MPI job of its own but a part of the application that spawned it:
	// it registers under that application's id, with its rank in the application's world (the spawning job's
	// processes first), so its agent counts it where it belongs and takes it for no application's rank 0.
	std::string app = appId(all[1]);
	int appRank = rank;
	if (const char *parent = std::getenv("MALLEO_PCM_APP"); parent && *parent && std::strlen(parent) <= kMaxIdLength) {
		app = parent;
		if (const char *base = std::getenv("MALLEO_PCM_RANK_BASE"); base && *base)
			appRank += std::atoi(base);
	}
	std::snprintf(gAppId, sizeof(gAppId), "%s", app.c_str());
	gAgentEndpoint = agentEndpoint();
	if (gAgentEndpoint.empty())
		return;
	ReporterSetup setup;
	setup.endpoint = gAgentEndpoint;
	setup.app = app;
	setup.rank = appRank;
	setup.size = size;
	setup.interval = reportInterval();
	setup.sameHost.resize(size_t(size));
	for (int r = 0; r < size; ++r)
		setup.sameHost[size_t(r)] = all[2 * size_t(r)] == mine[0];
	startReporter(std::move(setup));
}

void agentFinalDelta()
{
	stopReporter();
}

} // namespace malleo::pmpi

extern "C" void MALLEO_Set_active(int active)
{
	malleo::pmpi::setReportedActive(active != 0);
	malleo::pmpi::setIterationsActive(active != 0);
}

extern "C" const char *MALLEO_App_id(void)
{
	return malleo::pmpi::gAppId[0] ? malleo::pmpi::gAppId : nullptr;
}

extern "C" const char *MALLEO_Agent_endpoint(void)
{
	return malleo::pmpi::gAgentEndpoint.empty() ? nullptr : malleo::pmpi::gAgentEndpoint.c_str();
}
