// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/start_processes.h"

#include <csignal>

#include "reconfiguration/tags.h"

namespace malleo::pcm {

namespace {

std::string mpiErrorText(int code)
{
	char text[MPI_MAX_ERROR_STRING] = {};
	int length = 0;
	MPI_Error_string(code, text, &length);
	return std::string(text, static_cast<std::size_t>(length));
}

// At the root: `count` processes running `words`, on `host` when it is named, and the communicator of the root
// and them in `with_new`; the error's text when they could not be started.
std::string spawnAtRoot(std::vector<std::string> &words, int count, const std::string &host, MPI_Comm *with_new)
{
	std::vector<char *> argv;
	for (auto &word : words)
		argv.push_back(word.data());
	argv.push_back(nullptr);
	char command[] = "/usr/bin/env";
	// One spawn call for all `count` processes: a call costs about as much for 2 processes as for 1 (the
	// launch dominates; ENVIRONMENT.md). Open MPI ties the processes of one call together at MPI_Finalize,
	// which is harmless here because no process finalizes before the end of the run: a process that leaves
	// parks until then.
	MPI_Comm inter = MPI_COMM_NULL;
	std::vector<int> errors(static_cast<std::size_t>(count), MPI_SUCCESS);
	// The node's host, when it has one (a cluster of hosts): Open MPI starts the processes there, through the
	// daemon of that host (the standard key "host"). The host must be in the job's allocation (the hostfile):
	// Open MPI 4.1's "add-host", for one that is not, made ORTE lose its daemons and end the whole run.
	MPI_Info info = MPI_INFO_NULL;
	if (!host.empty()) {
		MPI_Info_create(&info);
		MPI_Info_set(info, "host", host.c_str());
	}
	// A spawn that fails is a refused operation, not the end of the run: errors return here, whatever the
	// application chose for MPI_COMM_SELF, which gets its own handler back after.
	MPI_Errhandler theirs = MPI_ERRHANDLER_NULL;
	MPI_Comm_get_errhandler(MPI_COMM_SELF, &theirs);
	MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
	int rc = MPI_Comm_spawn(command, argv.data(), count, info, 0, MPI_COMM_SELF, &inter, errors.data());
	MPI_Comm_set_errhandler(MPI_COMM_SELF, theirs);
	MPI_Errhandler_free(&theirs);
	if (info != MPI_INFO_NULL)
		MPI_Info_free(&info);
	if (rc != MPI_SUCCESS)
		return "MPI_Comm_spawn: " + mpiErrorText(rc);
	rc = MPI_Intercomm_merge(inter, 0, with_new);
	MPI_Comm_free(&inter);
	if (rc != MPI_SUCCESS)
		return "MPI_Intercomm_merge: " + mpiErrorText(rc);
	return {};
}

// At the root: each new process's manifest and block counts, then its word that its blocks are prepared.
void sendPreparation(MPI_Comm control, int count, const SpawnPreparation &preparation, MPI_Comm with_all)
{
	int parents = 0;
	MPI_Comm_size(control, &parents);
	const auto size = static_cast<std::int64_t>(preparation.manifest.size());
	const std::size_t buffers = preparation.counts.size() / static_cast<std::size_t>(count);
	for (int c = 0; c < count; ++c) {
		MPI_Send(&size, 1, MPI_INT64_T, parents + c, kTagSpawnPrepare, with_all);
		MPI_Send(preparation.manifest.data(), static_cast<int>(size), MPI_BYTE, parents + c, kTagSpawnPrepare,
			 with_all);
		MPI_Send(preparation.counts.data() + static_cast<std::size_t>(c) * buffers, static_cast<int>(buffers),
			 MPI_INT64_T, parents + c, kTagSpawnPrepare, with_all);
	}
	// The spawn is done when the new processes have prepared their blocks: in the background, so that the
	// operation does not wait for it in its agreement instead.
	for (int c = 0; c < count; ++c) {
		std::int64_t ready = 0;
		MPI_Request request = MPI_REQUEST_NULL;
		MPI_Irecv(&ready, 1, MPI_INT64_T, parents + c, kTagSpawnPrepare, with_all, &request);
		waitSleeping(&request, MPI_STATUS_IGNORE, 1000);
	}
}

} // namespace

void ignoreBrokenPipes()
{
	std::signal(SIGPIPE, SIG_IGN);
}

// Only the root calls MPI_Comm_spawn, over MPI_COMM_SELF: Open MPI makes every other process of a collective spawn
// wait by polling, measured at 0.25 s of a core for a 0.36 s spawn of 2 processes, which on a busy node is taken
// from the application (a background spawn's whole point is to leave it computing). The others sleep until the
// root says whether the processes are there, then all connect to them with MPI_Intercomm_create through the root.
SpawnOutcome startProcesses(MPI_Comm control, int root, int count, std::vector<std::string> words, int world_rank,
			    const ThreadAddress &self, SpawnPreparation preparation, const std::string &host)
{
	ignoreBrokenPipes();
	SpawnOutcome outcome;
	MPI_Comm with_new = MPI_COMM_NULL;  // at the root: the root and the new processes
	std::int64_t started = 0;
	if (world_rank == root) {
		outcome.why = spawnAtRoot(words, count, host, &with_new);
		started = outcome.why.empty() ? 1 : 0;
		int size = 0;
		MPI_Comm_size(control, &size);
		for (int w = 0; w < size; ++w)
			if (w != root)
				MPI_Send(&started, 1, MPI_INT64_T, w, kTagSpawned, control);
		if (!started)
			return outcome;
		for (int c = 1; c <= count; ++c)
			MPI_Send(&started, 1, MPI_INT64_T, c, kTagSpawned, with_new);
	} else {
		MPI_Request request = MPI_REQUEST_NULL;
		MPI_Irecv(&started, 1, MPI_INT64_T, root, kTagSpawned, control, &request);
		waitSleeping(&request, MPI_STATUS_IGNORE, 1000);
		if (!started) {
			outcome.why = "world rank " + std::to_string(root) + " could not start them";
			return outcome;
		}
	}
	MPI_Comm inter = MPI_COMM_NULL;
	int rc = MPI_Intercomm_create(control, root, with_new, 1, kTagSpawnConnect, &inter);
	if (with_new != MPI_COMM_NULL)
		MPI_Comm_free(&with_new);
	if (rc == MPI_SUCCESS) {
		rc = MPI_Intercomm_merge(inter, 0, &outcome.control);
		MPI_Comm_free(&inter);
	}
	if (rc != MPI_SUCCESS) {
		outcome.why = "connecting to the new processes: " + mpiErrorText(rc);
		return outcome;
	}
	MPI_Comm_set_errhandler(outcome.control, MPI_ERRORS_RETURN);
	outcome.places = gatherPlaces(outcome.control, self);
	if (world_rank == root)
		sendPreparation(control, count, preparation, outcome.control);
	outcome.ok = true;
	return outcome;
}

} // namespace malleo::pcm
