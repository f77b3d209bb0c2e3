// SPDX-License-Identifier: Apache-2.0
// The machinery under both APIs, one per process: the pool of processes, the command at each probe, the agreement
// protocol, and the collective reconfiguration that moves the registered data and rebuilds the active communicator.
// A reconfiguration's steps, each in its own file:
//   settings.cpp         the environment, read once at start()
//   reconfigurator.cpp   start (the pool, or joining the parents when spawned) and the end of the run
//   decision.cpp         at a probe: the next command, planned (spawning first when it needs more processes)
//   spawn.cpp            spawn mode: starting processes for a command, at the probe or in the background
//   agreement.cpp        seed 000's vote on the plan, and reporting a failure
//   operation.cpp        the operation: participants, manifest, buffers (buffer_moves.cpp), store, new world
//   parked.cpp           processes that are not active: waiting parked, messages to them
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "command_source.h"
#include "plan/plan.h"
#include "reconfiguration/buffers.h"
#include "reconfiguration/parking.h"
#include "reconfiguration/prepared_blocks.h"
#include "reconfiguration/settings.h"
#include "reconfiguration/start_processes.h"

namespace malleo::pcm {

enum class Outcome { None, Agreed, Failed };
enum class StartStatus { Started, Migrated, Splitted };

class Reconfigurator
{
public:
	static Reconfigurator &get();

	// MPI_Init when needed, then the pool: a spare process returns from here only once it is activated (its
	// data is in joinedBuffers() and friends), or never: at the end of the run it finalizes MPI and exits.
	int start(int *argc, char ***argv);
	bool running() const { return control_ != MPI_COMM_NULL; }

	MPI_Comm comm() const { return active_; }
	int rank() const;
	int size() const;
	// The element counts of the active slots for a buffer of `total` elements in the current configuration.
	std::vector<std::int64_t> currentCounts(std::int64_t total) const;
	StartStatus startStatus() const { return startStatus_; }
	// A spare process's first probe after start() returned: the probe that activated it, answered already.
	bool activationProbe() const { return skipProbe_; }
	std::int64_t probes() const { return probes_; }
	// The application's remaining iterations as of now (before the next probe); the coordinator tells its agent.
	void setRemainingIterations(std::int64_t remaining) { commands_.setRemaining(remaining, probes_); }

	// Phase 1, collective over the active processes at a probe: the next command, planned and agreed.
	Outcome decide();
	const Plan &plan() const { return plan_; }
	bool leaving() const;
	bool joining() const;

	// Phase 2, collective over the plan's participants: moves the buffers, sends `replicated` to the joiners
	// and a migration source's `store` to its replacement, rebuilds the active communicator. On failure nothing
	// changes (old buffers untouched, new ones freed) and error() says why.
	bool reconfigure(std::vector<BufferMove> &moves, const Store &replicated, const Store &store);

	// The count this process will hold after the agreed plan, for a buffer of `local_count` elements now
	// (collective over the active processes; 0 for a leaver).
	std::int64_t countAfter(std::int64_t local_count);

	// Before start(), on every process of a program whose leavers can re-enter (the C++ API, whose probe() parks
	// them and can return to them): processes that leave become spare again instead of left.
	void reuseLeavers() { membership_.reusable = true; }
	// The C++ API registers each buffer here too (every process, once per name): a spawn then has its new
	// processes allocate and fault in their blocks of it while they start, so that the operation's data lands in
	// memory already touched (prepared_blocks.h).
	void expectBuffer(const BufferSpec &spec, std::int64_t global_count);
	// In a process that has just left (reuseLeavers): waits parked. True when a later split or migration has
	// activated it again (its data is in joinedBuffers() and friends, rank and communicator are the new ones);
	// false when the run has ended (the caller finalizes MPI).
	bool parkAfterLeaving();
	// Waits parked until the run ends, then returns (the caller finalizes MPI); at once if it has ended.
	void waitForEnd();
	// Collective over the active processes at the end: releases every parked process.
	void finish();

	const std::string &error() const { return error_; }

	std::vector<BufferMove> &joinedBuffers() { return joinedBuffers_; }
	Store &joinedReplicated() { return joinedReplicated_; }
	Store &joinedStore() { return joinedStore_; }

private:
	enum class ParkEnd { Joined, Exit };

	// reconfigurator.cpp
	int initialize(int *argc, char ***argv);
	long activeAtStart(bool report) const;
	// Applies the settings read at start() (only world rank 0 `report`s what is wrong with them).
	bool configure(bool report); // false: MALLEO_FORCE is malformed
	// Collective over the launch's processes: every one takes world rank 0's registration. A spawned process takes
	// it from its environment, set by its spawner (spawnArguments).
	void shareApplication();
	// Whether this process runs on the node of world rank 0 of the launch, its root agent's (membership_.node).
	bool onRootNode() const;
	// At MPI_Finalize (a delete callback on MPI_COMM_SELF, run first thing there): in a run that has spawned,
	// frees the communicators that span its jobs, so Open MPI's MPI_Finalize finds none left.
	void watchFinalize();
	void releaseJobs();

	// agreement.cpp
	bool agree();
	bool participantVote(bool sleeping);
	// `refusal`: its kind for the agent (plan/refusal.h), when the plan refused the command; any other failure is `other`.
	void fail(const std::string &why, bool print, const Refusal &refusal = {});
	void stall(const char *before);
	// A command that failed before it had a plan (a spawn that failed, a busy refusal): reported as fail() does,
	// printed by the coordinator.
	void failUnplanned(Operation op, std::int64_t iteration, const std::string &why);

	// decision.cpp
	struct ProbeMessage;
	void coordinatorMessage(std::int64_t iteration, const Command &resumed, bool spawned, ProbeMessage &m);
	std::optional<Outcome> startFirst(const ProbeMessage &m, std::int64_t iteration);

	// parked.cpp
	ParkEnd park();
	// After a message to a parked process: cuts its sleep short when it is on this host.
	void wake(int world_rank) const;
	// Sends `message` (and `text` after it, if any) to each of `ranks`, parked processes, waking them, and waits
	// at most the agreement timeout for them to take it. Returns the ranks that did not: a parked process that died
	// (a launcher that lets the job go on, such as Open MPI's mpirun --enable-recovery) never does, and its
	// requests are left to MPI (freed), so that the run goes on without it.
	std::vector<int> sendToParked(const std::vector<int> &ranks, const std::vector<std::int64_t> &message,
				      const std::vector<char> &text = {});
	// The world ranks of the processes that are not active.
	std::vector<int> parked() const;

	// spawn.cpp. How many processes the command needs started on `node` (0: none), or a refusal.
	int spawnsNeeded(const Command &command, std::string &node, std::string &refusal);
	// Collective over the active processes: the coordinator wakes the parked ones, then all spawn.
	bool spawnFromProbe(int root, int count, const std::string &node, const Command &command, std::string &why);
	// The same, but the active processes start a helper thread that spawns while the application computes; the
	// parked ones take part at once. The coordinator keeps `command` to plan it once the processes are there.
	void spawnInBackground(int root, int count, const std::string &node, const Command &command,
			       std::int64_t iteration);
	// At a probe while a background spawn is under way, collective over the active processes: still starting
	// (nothing happens; a forced command falling due is refused), failed (reported), or the processes are merged
	// in and the coordinator's command is to be planned now (`resumed`).
	enum class SpawnState { Starting, Failed, Ready };
	SpawnState backgroundSpawnAtProbe(std::int64_t iteration, Command &resumed);
	struct BackgroundSpawn;
	// Joins the helper thread and merges its processes in (or says why not), on every active process.
	bool completeBackgroundSpawn(BackgroundSpawn &spawn, std::string &why);
	void wakeParkedForSpawn(int root, int count, const std::string &node);
	// Collective over the control communicator: starts `count` processes on `node`, merges them in as spare
	// processes of the highest world ranks.
	bool spawnCollective(int root, int count, const std::string &node, const Command &command, std::string &why);
	// At the root of a spawn: what its new processes are to prepare for `command` (SpawnPreparation), from the
	// plan it will have once they are there.
	SpawnPreparation preparation(const Command &command, int count, const std::string &node) const;
	std::vector<std::string> spawnArguments(const std::string &node) const;
	// The node's host for MPI_Comm_spawn's "host" key (MALLEO_NODE_HOSTS, cluster.json); empty: the MPI's choice.
	std::string spawnHost(const std::string &node) const;
	bool installSpawn(SpawnOutcome outcome, std::string &why);
	// In a spawned process: joins the parents' control communicator.
	void joinParents(MPI_Comm parent);

	MPI_Comm control_ = MPI_COMM_NULL;  // MPI_COMM_WORLD's processes, private to the bridge
	MPI_Comm active_ = MPI_COMM_NULL;
	int worldRank_ = 0;
	int worldSize_ = 0;
	bool spansJobs_ = false;  // control_ reaches processes of more than one job (a spawn happened)
	Settings settings_;
	Membership membership_;
	ThreadAddress self_;                  // the thread that called start(), the one that parks
	std::vector<ThreadAddress> threads_;  // every process's parking thread, by world rank
	Plan plan_;
	std::int64_t probes_ = 0;
	std::int64_t epoch_ = 0;
	bool skipProbe_ = false;  // a joiner's first probe is the one that activated it: already answered
	bool ended_ = false;      // the run's end reached this parked process: nothing more will come
	bool backgroundSpawnUsable_ = false;  // settings_.backgroundSpawn and MPI runs with MPI_THREAD_MULTIPLE
	struct BackgroundSpawn {
		std::thread thread;
		std::atomic<bool> done{false};
		SpawnOutcome outcome;        // written by the thread before `done`
		Command command;             // the coordinator's, planned once the processes are there
		std::int64_t iteration = 0;  // the probe that started it
		int count = 0;
		std::string node;
		double started = 0.0;
		double probeInterval = 0.0;  // the application's iteration before the spawn (phase_times.h)
	};
	std::unique_ptr<BackgroundSpawn> background_;
	std::string program_;                 // this program, for MPI_Comm_spawn
	std::vector<std::string> arguments_;  // its arguments
	CommandSource commands_;
	StartStatus startStatus_ = StartStatus::Started;
	std::string error_;
	std::vector<std::pair<BufferSpec, std::int64_t>> expected_;  // expectBuffer(): spec, global count
	PreparedBlocks prepared_;  // a spawned process's blocks, until an operation
	std::vector<BufferMove> joinedBuffers_;
	Store joinedReplicated_;
	Store joinedStore_;
};

} // namespace malleo::pcm
