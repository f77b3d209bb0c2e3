// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/reconfigurator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <utility>

#include "memory/shared_pages.h"
#include "reconfiguration/phase_times.h"
#include "reconfiguration/places.h"
#include "reconfiguration/tags.h"
#include "reconfiguration/world_publisher.h"

namespace malleo::pcm {

namespace {

bool contains(const std::vector<int> &list, int value)
{
	return std::find(list.begin(), list.end(), value) != list.end();
}

} // namespace

Reconfigurator &Reconfigurator::get()
{
	static Reconfigurator reconfigurator;
	return reconfigurator;
}

int Reconfigurator::rank() const
{
	int rank = -1;
	if (active_ != MPI_COMM_NULL)
		MPI_Comm_rank(active_, &rank);
	return rank;
}

int Reconfigurator::size() const
{
	return static_cast<int>(membership_.active.size());
}

int Reconfigurator::start(int *argc, char ***argv)
{
	if (running())
		return MPI_SUCCESS;
	// A process that is not active returns only once activated; at the end of the run it finalizes and exits.
	const auto parkUntilActivated = [this] {
		if (park() == ParkEnd::Exit) {
			MPI_Finalize();
			std::exit(0);
		}
		return MPI_SUCCESS;
	};
	if (const int rc = initialize(argc, argv); rc != MPI_SUCCESS)
		return rc;
	// The bridge's own use of MPI_COMM_WORLD below must reach the real one.
	publishWorld(MPI_COMM_NULL);
	self_ = thisThread();
	watchFinalize();
	MPI_Comm parent = MPI_COMM_NULL;
	MPI_Comm_get_parent(&parent);
	if (parent != MPI_COMM_NULL) {
		joinParents(parent);
		return parkUntilActivated();
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &worldRank_);
	MPI_Comm_size(MPI_COMM_WORLD, &worldSize_);
	MPI_Comm_dup(MPI_COMM_WORLD, &control_);
	MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);

	// Every process reads the same environment; only world rank 0 reports what is wrong with it.
	const bool report = worldRank_ == 0;
	const long active = activeAtStart(report);
	if (!configure(report)) {
		// A schedule asked for and not run would pass for a run that did it (and exit 0). Every process reads
		// the same MALLEO_FORCE, so each stops here alike, before the application computes anything.
		MPI_Finalize();
		std::exit(2);
	}
	bindToNode(settings_.nodes, worldRank_);

	Places places = gatherPlaces(control_, self_);
	membership_.node = std::move(places.nodes);
	threads_ = std::move(places.threads);
	shareApplication();
	membership_.state.assign(static_cast<std::size_t>(worldSize_), ProcessState::Spare);
	membership_.active.clear();
	for (int w = 0; w < worldSize_; ++w) {
		if (w < active) {
			membership_.state[static_cast<std::size_t>(w)] = ProcessState::Active;
			membership_.active.push_back(w);
		}
	}
	const bool is_active = worldRank_ < active;
	MPI_Comm_split(control_, is_active ? 0 : MPI_UNDEFINED, worldRank_, &active_);
	if (is_active) {
		publishWorld(active_);
		return MPI_SUCCESS;
	}

	return parkUntilActivated();
}

// The settings, what MPI_Comm_spawn needs to start this program again, and MPI initialized (unless the program did).
int Reconfigurator::initialize(int *argc, char ***argv)
{
	settings_ = readSettings();
	int initialized = 0;
	MPI_Initialized(&initialized);
	// What MPI_Comm_spawn needs to start this program again; MPI_Init may consume arguments.
	if (argc && argv && *argv)
		arguments_.assign(*argv + std::min(*argc, 1), *argv + *argc);
	// readlink does not terminate the path: its length is all there is (the bytes after it are the stack's).
	char exe[4096];
	if (const auto length = readlink("/proc/self/exe", exe, sizeof exe); length > 0)
		program_.assign(exe, static_cast<std::size_t>(length));
	if (initialized)
		return MPI_SUCCESS;
	// A background spawn calls MPI on a helper thread while the application's thread goes on using it.
	int provided = MPI_THREAD_SINGLE;
	return settings_.backgroundSpawn ? MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided)
					 : MPI_Init(argc, argv);
}

// How many of the launched processes are active at the start: MALLEO_POOL_ACTIVE, at most all of them.
long Reconfigurator::activeAtStart(bool report) const
{
	if (report && !settings_.poolActiveText.empty())
		std::fprintf(stderr, "malleo-pcm: MALLEO_POOL_ACTIVE=%s is not a positive integer; using %d\n",
			     settings_.poolActiveText.c_str(), worldSize_);
	const long wanted = settings_.poolActive > 0 ? settings_.poolActive : worldSize_;
	const long active = std::min<long>(wanted, worldSize_);
	if (report && wanted > active)
		std::fprintf(stderr, "malleo-pcm: MALLEO_POOL_ACTIVE=%ld is more than the %d processes launched; "
				     "all are active\n",
			     wanted, worldSize_);
	return active;
}

bool Reconfigurator::configure(bool report)
{
	if (report)
		for (const std::string &problem : settings_.problems)
			std::fprintf(stderr, "malleo-pcm: %s\n", problem.c_str());
	if (auto error = commands_.configureFromEnvironment(); !error.empty()) {
		if (report)
			std::fprintf(stderr, "malleo-pcm: %s; not running without the schedule asked for (fix or unset "
					     "MALLEO_FORCE)\n",
				     error.c_str());
		return false;
	}
	int threads = MPI_THREAD_SINGLE;
	MPI_Query_thread(&threads);
	backgroundSpawnUsable_ = settings_.backgroundSpawn && threads == MPI_THREAD_MULTIPLE;
	if (report && settings_.mode == Mode::Spawn && settings_.backgroundSpawnAsked && !backgroundSpawnUsable_)
		std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_SPAWN=background needs Open MPI initialized with "
				     "MPI_THREAD_MULTIPLE; new processes start while the application waits\n");
	configureWorldPublisher(report);
	// Where memfd_create fails the blocks are private, said only to whoever asked for shared ones.
	const bool shared = settings_.sharedPages && sharedPagesWork();
	if (settings_.sharedPagesAsked && !shared && report)
		std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_SHARED_PAGES=on, but memfd_create fails here; using off\n");
	configureBlocks(settings_.hugePages, shared);
	return true;
}

// Commands are left with the application's root agent, the one hosting world rank 0 of the launch, under the id
// the application registered there; whichever process coordinates asks that agent under that id. Its own
// registration may differ: a process of another MPI job (spawn mode) has its job's id, one on another node its
// node's agent.
void Reconfigurator::shareApplication()
{
	// Whole, with no bound of its own to keep in step with libmalleo_pmpi's (kMaxAppId) or an endpoint's: an id cut
	// short would be polled under and never match.
	std::string text;  // id, NUL, local endpoint, NUL, remote endpoint, NUL, the root agent's public key
	if (worldRank_ == 0) {
		const RootAgent root = AgentCommands::registeredHere();
		text = root.app + '\0' + root.local + '\0' + root.remote + '\0' + root.remoteKey;
	}
	std::int64_t size = static_cast<std::int64_t>(text.size());
	MPI_Bcast(&size, 1, MPI_INT64_T, 0, control_);
	text.resize(static_cast<std::size_t>(size));
	MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, control_);
	RootAgent root;
	std::string *fields[] = {&root.app, &root.local, &root.remote, &root.remoteKey};
	std::size_t start = 0;
	for (std::string *field : fields) {
		const std::size_t end = std::min(text.find('\0', start), text.size());
		*field = text.substr(start, end - start);
		start = std::min(end + 1, text.size());
	}
	commands_.setApplication(std::move(root), onRootNode());
}

bool Reconfigurator::onRootNode() const
{
	return membership_.node.empty() || membership_.node[0] == currentNode();
}

bool Reconfigurator::leaving() const
{
	return plan_.op != Operation::None && contains(plan_.leavers, worldRank_);
}

bool Reconfigurator::joining() const
{
	return plan_.op != Operation::None && contains(plan_.joiners, worldRank_);
}

std::int64_t Reconfigurator::countAfter(std::int64_t local_count)
{
	std::int64_t total = 0;
	MPI_Allreduce(&local_count, &total, 1, MPI_INT64_T, MPI_SUM, active_);
	const int slot = slotAfter(plan_, worldRank_);
	if (slot < 0)
		return 0;
	return targetCounts(total, static_cast<int>(plan_.after.size()), plan_.weights)[static_cast<std::size_t>(slot)];
}

std::vector<std::int64_t> Reconfigurator::currentCounts(std::int64_t total) const
{
	return targetCounts(total, size(), membership_.weights);
}

void Reconfigurator::finish()
{
	if (active_ == MPI_COMM_NULL)
		return;
	// The run's end ends the loop's last iteration, which no probe follows.
	publishProbe();
	// Processes still starting are merged in first, so that they too learn that the run has ended.
	if (const auto spawn = std::move(background_)) {
		std::string why;
		completeBackgroundSpawn(*spawn, why);
		failUnplanned(spawn->command.op, spawn->iteration, "the run ended while its new processes were starting");
	}
	MPI_Barrier(active_);
	if (rank() != 0)
		return;
	std::vector<std::int64_t> message(planWords(worldSize_) + 1, 0);
	message[0] = kExit;
	for (int w : sendToParked(parked(), message))
		std::fprintf(stderr, "malleo-pcm: world rank %d, parked, did not take the end of the run within %g s; "
				     "finalizing without it\n", w, settings_.agreeTimeout);
}

void Reconfigurator::joinParents(MPI_Comm parent)
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
	spansJobs_ = true;
	MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
	MPI_Comm_rank(control_, &worldRank_);
	MPI_Comm_size(control_, &worldSize_);
	configure(false);
	bindToNode(settings_.nodes, worldRank_);
	membership_.state.assign(static_cast<std::size_t>(worldSize_), ProcessState::Spare);
	Places places = gatherPlaces(control_, self_);
	membership_.node = std::move(places.nodes);
	threads_ = std::move(places.threads);
	prepared_.prepare(control_);
	RootAgent root;
	for (auto [name, field] : {std::pair{"MALLEO_PCM_APP", &root.app}, std::pair{"MALLEO_PCM_ROOT_AGENT", &root.local},
				   std::pair{"MALLEO_PCM_ROOT_AGENT_REMOTE", &root.remote},
				   std::pair{"MALLEO_PCM_ROOT_AGENT_KEY", &root.remoteKey}})
		if (const char *value = std::getenv(name))
			*field = value;
	commands_.setApplication(std::move(root), onRootNode());
	if (settings_.verbose) {
		const auto found = settings_.nodes.nodes.find(currentNode());
		const char *agent = std::getenv("MALLEO_AGENT");
		std::fprintf(stderr, "malleo-pcm: spawned world rank %d (pid %d) on node %s: CPUs %s, agent %s\n",
			     worldRank_, static_cast<int>(getpid()), currentNode().c_str(),
			     found == settings_.nodes.nodes.end() || found->second.cpus.empty()
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
void Reconfigurator::releaseJobs()
{
	if (!spansJobs_)
		return;
	spansJobs_ = false;
	publishWorld(MPI_COMM_NULL);
	if (active_ != MPI_COMM_NULL)
		MPI_Comm_free(&active_);
	MPI_Comm_free(&control_);
}

// MPI_Finalize frees MPI_COMM_SELF's attributes before anything else (MPI-4.0 11.2.4), while MPI is fully usable:
// every process of the run passes there, the parked ones when they are released too.
void Reconfigurator::watchFinalize()
{
	static bool watching = false;
	if (watching)
		return;
	watching = true;
	int key = MPI_KEYVAL_INVALID;
	MPI_Comm_create_keyval(
		MPI_COMM_NULL_COPY_FN,
		[](MPI_Comm, int, void *, void *) {
			Reconfigurator::get().releaseJobs();
			return MPI_SUCCESS;
		},
		&key, nullptr);
	MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
}

} // namespace malleo::pcm
