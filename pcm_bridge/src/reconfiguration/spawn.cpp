// SPDX-License-Identifier: Apache-2.0
// Spawn mode: a split or migration that needs more processes than the spare ones starts them with MPI_Comm_spawn
// on the target node and merges them in as spare processes of the highest world ranks; planning then treats them
// as it treats a pool's spare processes (joiners after the processes whose blocks they share, or in a migration
// source's slot), so rank order and block adjacency hold. Every process of the control communicator takes part in
// the spawn, the parked ones too, because the control communicator that reaches all of them is what grows.
#include <mpi.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sched.h>
#include <unistd.h>
#include <utility>

#include "reconfiguration/manifest.h"
#include "memory/page_move.h"
#include "reconfiguration/phase_times.h"
#include "reconfiguration/reconfigurator.h"
#include "reconfiguration/world_publisher.h"

namespace malleo::pcm {

namespace {

std::string mpiErrorText(int code)
{
	char text[MPI_MAX_ERROR_STRING] = {};
	int length = 0;
	MPI_Error_string(code, text, &length);
	return std::string(text, static_cast<std::size_t>(length));
}

std::string cpuListText(const std::vector<int> &cpus)
{
	std::string text;
	for (int cpu : cpus)
		text += (text.empty() ? "" : ",") + std::to_string(cpu);
	return text;
}

// Measured with Open MPI 4.1.4: once a run has processes of two spawn calls, MPI_Finalize of a spawned process
// writes to a connection another job has already closed, and SIGPIPE killed it after the run's result was out
// (mpirun then exits with 141; in every run of 4 tried). Ignored, the write fails with EPIPE, which Open MPI takes
// for the closed connection it is, and the run ends cleanly. Only processes of runs that spawn are affected.
void ignoreBrokenPipes()
{
	std::signal(SIGPIPE, SIG_IGN);
}

} // namespace

int Session::spawnsNeeded(const Command &command, std::string &node, std::string &refusal) const
{
	if (mode_ != Mode::spawn || (command.op != Operation::split && command.op != Operation::migrate))
		return 0;
	int available = 0;
	for (std::size_t w = 0; w < membership_.state.size(); ++w)
		if (membership_.state[w] == ProcessState::spare &&
		    (command.node.empty() || membership_.node[w] == command.node))
			++available;
	if (available >= command.count)
		return 0;
	// Unnamed: the coordinator's node.
	node = command.node.empty() ? membership_.node[static_cast<std::size_t>(world_rank_)] : command.node;
	const std::string what = std::string(operationName(command.op)) + " of " + std::to_string(command.count);
#ifndef OPEN_MPI
	refusal = what + ": spawn mode needs Open MPI (this MPI cannot spawn); use pool mode (MALLEO_POOL_ACTIVE)";
	return 0;
#else
	if (nodes_.described && !nodes_.nodes.count(node)) {
		std::string known;
		for (const auto &[name, info] : nodes_.nodes)
			known += (known.empty() ? "" : ", ") + name;
		refusal = what + ": no node '" + node + "' in MALLEO_NODES (" + known + ")";
		return 0;
	}
	if (program_.empty()) {
		refusal = what + ": this program's path is unknown (/proc/self/exe), so it cannot be spawned";
		return 0;
	}
	return command.count - available;
#endif
}

void Session::wakeParkedForSpawn(int root, int count, const std::string &node)
{
	if (world_rank_ != root)
		return;
	std::vector<std::int64_t> message(planWords(world_size_) + 1, 0);
	message[0] = kSpawn;
	message[1] = root;
	message[2] = count;
	std::vector<char> name(kNodeNameBytes, 0);
	std::strncpy(name.data(), node.c_str(), name.size() - 1);
	sendToParked(parked(), message, name);
}

bool Session::spawnFromProbe(int root, int count, const std::string &node, const Command &command, std::string &why)
{
	// The probe's broadcast so far is agreement; the spawn, waking the parked processes included, is timed apart.
	phaseTimes().mark(Phase::agreement);
	wakeParkedForSpawn(root, count, node);
	const bool spawned = spawnCollective(root, count, node, command, why);
	phaseTimes().mark(Phase::spawn);
	return spawned;
}

void Session::spawnInBackground(int root, int count, const std::string &node, const Command &command,
				std::int64_t iteration)
{
	wakeParkedForSpawn(root, count, node);
	background_ = std::make_unique<BackgroundSpawn>();
	BackgroundSpawn &spawn = *background_;
	spawn.command = command;
	spawn.iteration = iteration;
	spawn.count = count;
	spawn.node = node;
	spawn.started = MPI_Wtime();
	spawn.probe_interval = phaseTimes().probeInterval();
	// Everything the thread reads is copied here: the main thread goes on with the application meanwhile, and
	// touches neither control_ nor the membership until it has joined the thread (completeBackgroundSpawn).
	spawn.thread = std::thread([&spawn, control = control_, root, count, words = spawnArguments(node),
				    rank = world_rank_, self = self_,
				    prepared = world_rank_ == root ? preparation(command, count, node) : SpawnPreparation{}] {
		spawn.outcome = startProcesses(control, root, count, words, rank, self, prepared);
		spawn.done.store(true, std::memory_order_release);
	});
}

Session::SpawnState Session::backgroundSpawnAtProbe(std::int64_t iteration, Command &resumed)
{
	// The coordinator's view decides for all: [ready, operation of a forced command falling due meanwhile].
	std::int64_t message[2] = {0, 0};
	if (rank() == 0) {
		message[0] = background_->done.load(std::memory_order_acquire) ? 1 : 0;
		if (!message[0])
			message[1] = static_cast<std::int64_t>(commands_.forcedAt(iteration).op);
	}
	MPI_Bcast(message, 2, MPI_INT64_T, 0, active_);
	if (!message[0] && !message[1])
		return SpawnState::starting;
	if (!message[0]) {
		// One operation at a time, as the agent's lock has it: the forced command is refused, not queued.
		failUnplanned(static_cast<Operation>(message[1]), iteration,
			      "busy: the " + std::string(operationName(background_->command.op)) + " of iteration " +
				      std::to_string(background_->iteration) + " is still starting its processes");
		return SpawnState::failed;
	}
	const auto spawn = std::move(background_);
	// The agent's command was taken at the probe that started the spawn; its outcome comes from this one.
	commands_.deferred(spawn->iteration, iteration);
	resumed = spawn->command;
	resumed.iteration = iteration;
	const double overlapped = MPI_Wtime() - spawn->started;
	std::string why;
	const bool ok = completeBackgroundSpawn(*spawn, why);
	phaseTimes().mark(Phase::agreement);
	phaseTimes().overlapped(overlapped, iteration - spawn->iteration, spawn->probe_interval);
	if (ok)
		return SpawnState::ready;
	failUnplanned(resumed.op, iteration,
		      "spawning " + std::to_string(spawn->count) + " processes on node '" + spawn->node +
			      "' failed: " + why);
	return SpawnState::failed;
}

bool Session::completeBackgroundSpawn(BackgroundSpawn &spawn, std::string &why)
{
	spawn.thread.join();
	return installSpawn(std::move(spawn.outcome), why);
}

bool Session::spawnCollective(int root, int count, const std::string &node, const Command &command, std::string &why)
{
	return installSpawn(startProcesses(control_, root, count, spawnArguments(node), world_rank_, self_,
					   world_rank_ == root ? preparation(command, count, node) : SpawnPreparation{}),
			    why);
}

void Session::expectBuffer(const BufferSpec &spec, std::int64_t global_count)
{
	for (auto &[known, global] : expected_)
		if (known.name == spec.name) {
			known = spec;
			global = global_count;
			return;
		}
	expected_.emplace_back(spec, global_count);
}

// The plan the command will have once the new processes are there, as spare processes of the highest world ranks
// on `node` (planning rules, plan.h): the new processes among its joiners get their slots' counts. Nothing when
// it cannot be planned; the operation then allocates as usual.
SpawnPreparation Session::preparation(const Command &command, int count, const std::string &node) const
{
	SpawnPreparation out;
	if (expected_.empty())
		return out;
	Membership future = membership_;
	future.state.resize(static_cast<std::size_t>(world_size_ + count), ProcessState::spare);
	future.node.resize(static_cast<std::size_t>(world_size_ + count), node);
	Plan plan;
	if (!makePlan(command, future, plan).empty())
		return out;
	std::vector<BufferMove> buffers;
	for (const auto &[spec, global] : expected_) {
		BufferMove move;
		move.spec = spec;
		buffers.push_back(move);
	}
	out.manifest = encodeManifest(buffers, {});
	std::vector<std::vector<std::int64_t>> shares;  // [buffer][slot after]
	for (const auto &[spec, global] : expected_)
		shares.push_back(targetCounts(global, static_cast<int>(plan.after.size()), plan.weights));
	for (int c = 0; c < count; ++c) {
		const auto slot = std::find(plan.after.begin(), plan.after.end(), world_size_ + c);
		for (const auto &counts : shares)
			out.counts.push_back(slot == plan.after.end() ? 0
							      : counts[static_cast<std::size_t>(slot - plan.after.begin())]);
	}
	return out;
}

void Session::prepareBlocks()
{
	MPI_Status status;
	std::int64_t size = 0;
	MPI_Recv(&size, 1, MPI_INT64_T, MPI_ANY_SOURCE, kTagSpawnPrepare, control_, &status);
	std::vector<unsigned char> manifest(static_cast<std::size_t>(size));
	MPI_Recv(manifest.data(), static_cast<int>(size), MPI_BYTE, status.MPI_SOURCE, kTagSpawnPrepare, control_,
		 MPI_STATUS_IGNORE);
	std::vector<BufferSpec> specs;
	Store ignored;
	if (size > 0 && !decodeManifest(manifest, specs, ignored))
		specs.clear();
	int sent = 0;
	MPI_Probe(status.MPI_SOURCE, kTagSpawnPrepare, control_, &status);
	MPI_Get_count(&status, MPI_INT64_T, &sent);
	std::vector<std::int64_t> counts(static_cast<std::size_t>(sent), 0);
	MPI_Recv(counts.data(), sent, MPI_INT64_T, status.MPI_SOURCE, kTagSpawnPrepare, control_, MPI_STATUS_IGNORE);
	if (counts.size() != specs.size())
		specs.clear();
	for (std::size_t b = 0; b < specs.size(); ++b) {
		BufferMove block;
		block.spec = specs[b];
		block.new_count = counts[b];
		const std::int64_t bytes = block.elementBytes();
		// A shared block is placed by its first element's global index, which only the operation knows, and
		// takes most of its pages from the processes on its host instead of faulting them in.
		if (block.new_count > 0 && !sharesPages())
			block.new_data = allocateElements(block.new_count, block.spec.halo, bytes, false);
		if (!block.new_data)
			continue;
		block.allocated = true;
		// Faulted in now, while the application computes, instead of inside the operation's copies.
		populatePages(block.new_data, static_cast<std::size_t>((block.new_count + 2 * block.spec.halo) * bytes));
		prepared_.push_back(block);
	}
	const std::int64_t ready = 1;
	MPI_Send(&ready, 1, MPI_INT64_T, status.MPI_SOURCE, kTagSpawnPrepare, control_);
}

void Session::dropPrepared()
{
	for (auto &block : prepared_)
		releaseElements(block.new_data);
	prepared_.clear();
}

void *Session::takePrepared(const BufferMove &move)
{
	for (auto block = prepared_.begin(); block != prepared_.end(); ++block)
		if (block->spec.name == move.spec.name && block->new_count == move.new_count &&
		    block->spec.halo == move.spec.halo && block->elementBytes() == move.elementBytes()) {
			void *data = block->new_data;
			prepared_.erase(block);
			return data;
		}
	return nullptr;
}

std::vector<std::string> Session::spawnArguments(const std::string &node) const
{
	// The new process learns its node before its first instruction: through its environment, set by env(1) in
	// front of the program, so MALLEO_NODE and MALLEO_AGENT are there for libmalleo_pmpi's start too and show in
	// /proc/<pid>/environ.
	std::vector<std::string> words;
	const auto found = nodes_.nodes.find(node);
	words.push_back("MALLEO_NODE=" + node);
	if (found != nodes_.nodes.end() && !found->second.agent.empty())
		words.push_back("MALLEO_AGENT=" + found->second.agent);
	// Where the application's commands are: the new process may coordinate one day (session.cpp,
	// shareApplication).
	if (const RootAgent &root = commands_.application(); !root.app.empty() && !root.local.empty()) {
		words.push_back("MALLEO_PCM_APP=" + root.app);
		words.push_back("MALLEO_PCM_ROOT_AGENT=" + root.local);
		if (!root.remote.empty())
			words.push_back("MALLEO_PCM_ROOT_AGENT_REMOTE=" + root.remote);
	}
	words.push_back(program_);
	words.insert(words.end(), arguments_.begin(), arguments_.end());
	return words;
}

// Only the root calls MPI_Comm_spawn, over MPI_COMM_SELF: Open MPI makes every other process of a collective spawn
// wait by polling, measured at 0.25 s of a core for a 0.36 s spawn of 2 processes, which on a busy node is taken
// from the application (a background spawn's whole point is to leave it computing). The others sleep until the
// root says whether the processes are there, then all connect to them with MPI_Intercomm_create through the root.
SpawnOutcome startProcesses(MPI_Comm control, int root, int count, std::vector<std::string> words, int world_rank,
			    const ThreadAddress &self, SpawnPreparation preparation)
{
	ignoreBrokenPipes();
	SpawnOutcome outcome;
	MPI_Comm with_new = MPI_COMM_NULL;  // at the root: the root and the new processes
	std::int64_t started = 0;
	if (world_rank == root) {
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
		int rc = MPI_Comm_spawn(command, argv.data(), count, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
					errors.data());
		if (rc != MPI_SUCCESS) {
			outcome.why = "MPI_Comm_spawn: " + mpiErrorText(rc);
		} else {
			rc = MPI_Intercomm_merge(inter, 0, &with_new);
			MPI_Comm_free(&inter);
			if (rc != MPI_SUCCESS)
				outcome.why = "MPI_Intercomm_merge: " + mpiErrorText(rc);
		}
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
	if (world_rank == root) {
		int parents = 0;
		MPI_Comm_size(control, &parents);
		const auto size = static_cast<std::int64_t>(preparation.manifest.size());
		const std::size_t buffers = preparation.counts.size() / static_cast<std::size_t>(count);
		for (int c = 0; c < count; ++c) {
			MPI_Send(&size, 1, MPI_INT64_T, parents + c, kTagSpawnPrepare, outcome.control);
			MPI_Send(preparation.manifest.data(), static_cast<int>(size), MPI_BYTE, parents + c, kTagSpawnPrepare,
				 outcome.control);
			MPI_Send(preparation.counts.data() + static_cast<std::size_t>(c) * buffers, static_cast<int>(buffers),
				 MPI_INT64_T, parents + c, kTagSpawnPrepare, outcome.control);
		}
		// The spawn is done when the new processes have prepared their blocks: in the background, so that the
		// operation does not wait for it in its agreement instead.
		for (int c = 0; c < count; ++c) {
			std::int64_t ready = 0;
			MPI_Request request = MPI_REQUEST_NULL;
			MPI_Irecv(&ready, 1, MPI_INT64_T, parents + c, kTagSpawnPrepare, outcome.control, &request);
			waitSleeping(&request, MPI_STATUS_IGNORE, 1000);
		}
	}
	outcome.ok = true;
	return outcome;
}

bool Session::installSpawn(SpawnOutcome outcome, std::string &why)
{
	if (!outcome.ok) {
		why = outcome.why;
		return false;
	}
	MPI_Comm_free(&control_);
	control_ = outcome.control;
	spans_jobs_ = true;
	world_size_ = static_cast<int>(outcome.places.nodes.size());
	membership_.node = std::move(outcome.places.nodes);
	membership_.state.resize(static_cast<std::size_t>(world_size_), ProcessState::spare);
	threads_ = std::move(outcome.places.threads);
	return true;
}

void Session::joinParents(MPI_Comm parent)
{
	ignoreBrokenPipes();
	// The parent that started this process (startProcesses' root) says when the others are ready to connect.
	MPI_Comm with_root = MPI_COMM_NULL;
	MPI_Intercomm_merge(parent, 1, &with_root);
	// Every communicator that reaches the parents is freed: one left open would make MPI_Finalize wait for a
	// disconnect they never join (Open MPI's ompi_dpm_dyn_finalize hung there).
	MPI_Comm_free(&parent);
	std::int64_t started = 0;
	MPI_Request request = MPI_REQUEST_NULL;
	MPI_Irecv(&started, 1, MPI_INT64_T, 0, kTagSpawned, with_root, &request);
	waitSleeping(&request, MPI_STATUS_IGNORE, 1000);
	MPI_Comm inter = MPI_COMM_NULL;
	MPI_Intercomm_create(MPI_COMM_WORLD, 0, with_root, 0, kTagSpawnConnect, &inter);
	MPI_Intercomm_merge(inter, 1, &control_);
	MPI_Comm_free(&inter);
	MPI_Comm_free(&with_root);
	spans_jobs_ = true;
	MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
	MPI_Comm_rank(control_, &world_rank_);
	MPI_Comm_size(control_, &world_size_);
	configure(false);
	bindToNode();
	membership_.state.assign(static_cast<std::size_t>(world_size_), ProcessState::spare);
	Places places = gatherPlaces(control_, self_);
	membership_.node = std::move(places.nodes);
	threads_ = std::move(places.threads);
	prepareBlocks();
	RootAgent root;
	for (auto [name, field] : {std::pair{"MALLEO_PCM_APP", &root.app}, std::pair{"MALLEO_PCM_ROOT_AGENT", &root.local},
				   std::pair{"MALLEO_PCM_ROOT_AGENT_REMOTE", &root.remote}})
		if (const char *value = std::getenv(name))
			*field = value;
	commands_.setApplication(std::move(root), onRootNode());
	if (verbose_) {
		const auto found = nodes_.nodes.find(currentNode());
		const char *agent = std::getenv("MALLEO_AGENT");
		std::fprintf(stderr, "malleo-pcm: spawned world rank %d (pid %d) on node %s: CPUs %s, agent %s\n",
			     world_rank_, static_cast<int>(getpid()), currentNode().c_str(),
			     found == nodes_.nodes.end() || found->second.cpus.empty()
				     ? "any"
				     : cpuListText(found->second.cpus).c_str(),
			     agent && *agent ? agent : "-");
	}
}

// Measured with Open MPI 4.1.4 (sequence 7 of heat2d_spawn_sequences_more_openmpi hung in 3 of 4 runs): MPI_Finalize
// (ompi_dpm_dyn_finalize) ends every communicator still flagged as spanning jobs with a synchronous exchange of
// empty messages with each of its members, but only in a process whose count of such communicators
// (ompi_comm_num_dyncomm) is above 1, and in a run of several spawns those counts had drifted apart: -3, -2, 0, 1
// and 2 on the 8 processes. One process alone sent to peers that had finalized without listening: it hung, and
// wrote to their closed connections (`mca_btl_tcp_frag_send: writev failed: Broken pipe`). MPI_Comm_disconnect is
// no way out there: on an intracommunicator that spans jobs (one made by MPI_Intercomm_merge) it hangs in its
// PMIx fence, even for a single spawn of one process (only intercommunicators disconnect). So the bridge frees the
// communicators it keeps that span jobs (the active one, the control one) before MPI_Finalize does anything, as
// it frees the spawns' intercommunicators right after their merge: then ompi_dpm_dyn_finalize finds none and
// exchanges nothing, and each process finalizes with the processes of its own spawn call only. Nothing is
// pending on them by then: the active processes passed the barrier of finish() and the parked ones received its
// exit message.
void Session::releaseJobs()
{
	if (!spans_jobs_)
		return;
	spans_jobs_ = false;
	publishWorld(MPI_COMM_NULL);
	if (active_ != MPI_COMM_NULL)
		MPI_Comm_free(&active_);
	MPI_Comm_free(&control_);
}

// MPI_Finalize frees MPI_COMM_SELF's attributes before anything else (MPI-4.0 11.2.4), while MPI is fully usable:
// every process of the run passes there, the parked ones when they are released too.
void Session::watchFinalize()
{
	static bool watching = false;
	if (watching)
		return;
	watching = true;
	int key = MPI_KEYVAL_INVALID;
	MPI_Comm_create_keyval(
		MPI_COMM_NULL_COPY_FN,
		[](MPI_Comm, int, void *, void *) {
			Session::get().releaseJobs();
			return MPI_SUCCESS;
		},
		&key, nullptr);
	MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
}

// A process on a described node runs on that node's CPUs, every thread of it (MPI_Init may have started some, and
// Open MPI may have bound the process already).
void Session::bindToNode()
{
	const auto found = nodes_.nodes.find(currentNode());
	if (found == nodes_.nodes.end() || found->second.cpus.empty())
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int cpu : found->second.cpus)
		if (cpu < CPU_SETSIZE)
			CPU_SET(cpu, &set);
	bool bound = true;
	if (DIR *tasks = opendir("/proc/self/task")) {
		while (const dirent *entry = readdir(tasks)) {
			if (entry->d_name[0] == '.')
				continue;
			if (sched_setaffinity(static_cast<pid_t>(std::atoi(entry->d_name)), sizeof set, &set) != 0)
				bound = false;
		}
		closedir(tasks);
	} else {
		bound = sched_setaffinity(0, sizeof set, &set) == 0;
	}
	if (!bound)
		std::fprintf(stderr, "malleo-pcm: could not bind world rank %d to node %s's CPUs %s\n", world_rank_,
			     found->first.c_str(), cpuListText(found->second.cpus).c_str());
}

} // namespace malleo::pcm
