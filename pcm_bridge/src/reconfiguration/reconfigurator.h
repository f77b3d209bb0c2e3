// SPDX-License-Identifier: Apache-2.0
// The machinery under both APIs: the pool of processes, the command at each probe, the agreement protocol, and
// the collective reconfiguration that moves the registered data and rebuilds the active communicator.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "command_source.h"
#include "plan/faults.h"
#include "plan/nodes.h"
#include "reconfiguration/parking.h"
#include "plan/plan.h"
#include "redistribution/schedule.h"

namespace malleo::pcm {

// Messages to a parked process: tag kTagParked on the control communicator, first word the kind.
inline constexpr int kTagParked = 7401;
inline constexpr std::int64_t kPrepare = 1;  // the plan of an operation it takes part in follows
inline constexpr std::int64_t kExit = 2;     // the run ends
inline constexpr std::int64_t kSpawn = 3;    // take part in MPI_Comm_spawn (root, count; then the node's name)
inline constexpr int kNodeNameBytes = 256;
// Starting processes (spawn.cpp): the root tells the others and the new processes that they are there (one word:
// 1, or 0 when the spawn failed); then all connect with MPI_Intercomm_create under the second tag.
inline constexpr int kTagSpawned = 7405;
inline constexpr int kTagSpawnConnect = 7406;
inline constexpr int kTagSpawnPrepare = 7407;  // the root to each new process: its SpawnPreparation

// Where new processes come from (MALLEO_PCM_MODE): spare processes of an over-allocated launch, or
// MPI_Comm_spawn when a split or migration needs more than the spare ones.
enum class Mode { pool, spawn };
// Mode from MALLEO_PCM_MODE and MALLEO_POOL_ACTIVE; `report` prints one line on a bad value.
Mode modeFromEnvironment(bool report);
// Spawn mode under Open MPI with MALLEO_PCM_SPAWN not `wait`: MPI must be initialized with MPI_THREAD_MULTIPLE so
// that new processes start on a helper thread while the application computes.
bool backgroundSpawnWanted();

// Where every process of a control communicator runs, by world rank: its node (currentNode(), the bridge's
// notion) and the thread that parks there (parking.h).
struct Places {
	std::vector<std::string> nodes;
	std::vector<ThreadAddress> threads;
};
// Collective over `control`: each process tells its own, `self` being its parking thread.
Places gatherPlaces(MPI_Comm control, const ThreadAddress &self);

// What starting processes produced (spawn.cpp): made without touching a session, so it can run on a helper thread.
struct SpawnOutcome {
	bool ok = false;
	std::string why;                       // when not ok
	MPI_Comm control = MPI_COMM_NULL;      // the control communicator with the new processes at its end
	Places places;                         // of every process, new ones included
};
// What the root tells the new processes once they are connected (spawn.cpp, Session::preparation): the buffers of
// the operation they start for (a manifest without replicated values) and, for each new process in world-rank
// order, its count of each buffer after the operation, so that it allocates and faults in its blocks while the
// application goes on. Empty when the program registered no buffers (the PCM C API).
struct SpawnPreparation {
	std::vector<unsigned char> manifest;
	std::vector<std::int64_t> counts;  // [new process][buffer]
};
// Collective over `control` (the parents) and the new processes (joinParents): the root starts `count` processes
// of `words` (an env(1) command line that sets their MALLEO_NODE), all merge them in at the end of a new control
// communicator, and the root sends each its part of `preparation`.
SpawnOutcome startProcesses(MPI_Comm control, int root, int count, std::vector<std::string> words, int world_rank,
			    const ThreadAddress &self, SpawnPreparation preparation);

// This process's node: MALLEO_NODE, else the MPI processor name.
std::string currentNode();

enum class BaseType : std::int32_t { int32 = 0, int64 = 1, float32 = 2, float64 = 3, byte = 4 };
MPI_Datatype mpiType(BaseType type);
std::size_t baseSize(BaseType type);

struct BufferSpec {
	std::string name;
	Distribution distribution = Distribution::block1d;
	BaseType base = BaseType::byte;
	std::int64_t element_length = 1;  // base items per element (a heat2d column: its rows)
	std::int64_t halo = 0;            // elements kept before and after the local block (ghost columns)
};

// One process's side of a distributed buffer in a reconfiguration. Allocations include the halo.
struct BufferMove {
	BufferSpec spec;
	void *old_data = nullptr;
	std::int64_t old_count = 0;
	void *new_data = nullptr;  // in: a destination the caller provides, or null; out: where the data is
	std::int64_t new_count = 0;
	bool allocated = false;    // new_data was allocated here (allocateElements): the caller frees it with releaseElements
	std::int64_t capacity = -1;  // elements a caller-provided new_data holds (halo excluded); -1: enough
	// The caller keeps using old_data as the new buffer where it can (PCM_Split rewrites the columns in place):
	// a process whose new elements are exactly the first ones it holds, or those followed by elements from others
	// that fit in `old_capacity`, gets new_data = old_data, and nothing of its data is copied or allocated.
	bool in_place = false;
	std::int64_t old_capacity = -1;  // elements old_data has room for (halo excluded); -1: old_count
	// The caller discards old_data after a success (a merge's old columns, the C++ API's old storage): the
	// elements this process keeps may move into new_data by their pages (page_move.h) once the move succeeded.
	bool discard_old = false;
	std::int64_t elementBytes() const;
};

// A buffer of `count` elements of `element_bytes` with `halo` more on each side, to free with releaseElements: where
// sharesPages() and from kPageMoveMin bytes a shared block (shared_pages.h, zeroed) placed by the global index
// `first` of its first element, else allocateBlock (page_move.h), placed for allocateForMallocedBuffers if it was
// called, else with huge pages where MALLEO_PCM_HUGE_PAGES=on, else on a page.
void *allocateElements(std::int64_t count, std::int64_t halo, std::int64_t element_bytes, bool zero_elements,
		       std::int64_t first = 0);
void releaseElements(void *block);
// The global index a shared block of slot `slot` is placed by (allocateElements): for block1d the elements of the
// slots before it; for the others 0, which lines up the elements a process keeps at the start of its block (an
// independent buffer's) with their old places.
std::int64_t firstElement(Distribution distribution, const std::vector<std::int64_t> &counts, int slot);
// Unless MALLEO_PCM_SHARED_PAGES=off (or memfd_create fails): the session's blocks, and PCM_Alloc's, are shared
// blocks. Off until the session is configured (MPI_Init).
bool sharesPages();

// The program takes what the session receives for it into buffers it mallocs itself (the PCM C API's PCM_Load):
// from now on the session places its blocks as malloc would (Placement::like_malloc), so that their pages can move
// there instead of being copied into fresh memory.
void allocateForMallocedBuffers();

// Named values: replicated ones go to joiners; a migration source's store goes to its replacement.
struct Blob {
	BaseType type = BaseType::byte;
	std::int64_t count = 0;
	std::vector<unsigned char> bytes;
};
using Store = std::map<std::string, Blob>;

enum class Outcome { none, agreed, failed };
enum class StartStatus { started, migrated, splitted };

class Session
{
public:
	static Session &get();

	// MPI_Init when needed, then the pool: a spare process returns from here only once it is activated (its
	// data is in joinedBuffers() and friends), or never: at the end of the run it finalizes MPI and exits.
	int start(int *argc, char ***argv);
	bool running() const { return control_ != MPI_COMM_NULL; }

	MPI_Comm comm() const { return active_; }
	int rank() const;
	int size() const;
	Mode mode() const { return mode_; }
	// The element counts of the active slots for a buffer of `total` elements in the current configuration.
	std::vector<std::int64_t> currentCounts(std::int64_t total) const;
	StartStatus startStatus() const { return start_status_; }
	// A spare process's first probe after start() returned: the probe that activated it, answered already.
	bool activationProbe() const { return skip_probe_; }
	std::int64_t probes() const { return probes_; }

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
	// memory already touched (spawn.cpp).
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

	std::vector<BufferMove> &joinedBuffers() { return joined_buffers_; }
	Store &joinedReplicated() { return joined_replicated_; }
	Store &joinedStore() { return joined_store_; }

private:
	enum class ParkEnd { joined, exit };

	void configure(bool report);
	// Collective over the launch's processes: every one takes world rank 0's registration (shareApplication in
	// session.cpp). A spawned process takes it from its environment, set by its spawner (spawnArguments).
	void shareApplication();
	// Whether this process runs on the node of world rank 0 of the launch, its root agent's (membership_.node).
	bool onRootNode() const;
	ParkEnd park();
	// Spawn mode (spawn.cpp). How many processes the command needs started on `node` (0: none), or a refusal.
	int spawnsNeeded(const Command &command, std::string &node, std::string &refusal) const;
	// Collective over the active processes: the coordinator wakes the parked ones, then all spawn.
	bool spawnFromProbe(int root, int count, const std::string &node, const Command &command, std::string &why);
	// The same, but the active processes start a helper thread that spawns while the application computes; the
	// parked ones take part at once. The coordinator keeps `command` to plan it once the processes are there.
	void spawnInBackground(int root, int count, const std::string &node, const Command &command,
			       std::int64_t iteration);
	// At a probe while a background spawn is under way, collective over the active processes: still starting
	// (nothing happens; a forced command falling due is refused), failed (reported), or the processes are merged
	// in and the coordinator's command is to be planned now (`resumed`).
	enum class SpawnState { starting, failed, ready };
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
	// In a spawned process, after joining: allocates and faults in the blocks the root describes.
	void prepareBlocks();
	// In a joiner: a prepared block for `move` (same buffer, count, element and halo), taken, or null.
	void *takePrepared(const BufferMove &move);
	void dropPrepared();
	std::vector<std::string> spawnArguments(const std::string &node) const;
	bool installSpawn(SpawnOutcome outcome, std::string &why);
	// In a spawned process: joins the parents' control communicator.
	void joinParents(MPI_Comm parent);
	void bindToNode();
	// At MPI_Finalize (a delete callback on MPI_COMM_SELF, run first thing there): in a run that has spawned,
	// frees the communicators that span its jobs, so Open MPI's MPI_Finalize finds none left (spawn.cpp).
	void watchFinalize();
	void releaseJobs();
	bool agree();
	bool participantVote(bool sleeping);
	void fail(const std::string &why, bool print);
	// A command that failed before it had a plan (a spawn that failed, a busy refusal): reported as fail() does,
	// printed by the coordinator.
	void failUnplanned(Operation op, std::int64_t iteration, const std::string &why);
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
	int unionRank(const std::vector<int> &all, int world_rank) const;

	MPI_Comm control_ = MPI_COMM_NULL;  // MPI_COMM_WORLD's processes, private to the bridge
	MPI_Comm active_ = MPI_COMM_NULL;
	int world_rank_ = 0;
	int world_size_ = 0;
	bool spans_jobs_ = false;  // control_ reaches processes of more than one job (a spawn happened)
	Membership membership_;
	ThreadAddress self_;                  // the thread that called start(), the one that parks
	std::vector<ThreadAddress> threads_;  // every process's parking thread, by world rank
	Plan plan_;
	std::int64_t probes_ = 0;
	std::int64_t epoch_ = 0;
	bool skip_probe_ = false;  // a joiner's first probe is the one that activated it: already answered
	bool ended_ = false;       // the run's end reached this parked process: nothing more will come
	double agree_timeout_ = 10.0;
	bool verbose_ = false;  // MALLEO_PCM_VERBOSE: one line per completed operation
	Mode mode_ = Mode::pool;
	bool spawn_in_background_ = false;  // backgroundSpawnWanted() and MPI runs with MPI_THREAD_MULTIPLE
	struct BackgroundSpawn {
		std::thread thread;
		std::atomic<bool> done{false};
		SpawnOutcome outcome;        // written by the thread before `done`
		Command command;             // the coordinator's, planned once the processes are there
		std::int64_t iteration = 0;  // the probe that started it
		int count = 0;
		std::string node;
		double started = 0.0;
		double probe_interval = 0.0;  // the application's iteration before the spawn (phase_times.h)
	};
	std::unique_ptr<BackgroundSpawn> background_;
	NodeMap nodes_;
	std::string program_;                 // this program, for MPI_Comm_spawn
	std::vector<std::string> arguments_;  // its arguments
	CommandSource commands_;
	Faults faults_;
	StartStatus start_status_ = StartStatus::started;
	std::string error_;
	std::vector<std::pair<BufferSpec, std::int64_t>> expected_;  // expectBuffer(): spec, global count
	std::vector<BufferMove> prepared_;  // a spawned process's blocks from prepareBlocks(), until an operation
	std::vector<BufferMove> joined_buffers_;
	Store joined_replicated_;
	Store joined_store_;
};

} // namespace malleo::pcm
