// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/reconfigurator.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "executor/executor.h"
#include "reconfiguration/manifest.h"
#include "executor/page_adoption.h"
#include "memory/page_move.h"
#include "reconfiguration/parking.h"
#include "reconfiguration/world_publisher.h"
#include "reconfiguration/phase_times.h"

namespace malleo::pcm {

namespace {

// Tags on the bridge's private communicators; the executor uses its default (7300) on the union communicator.
constexpr int kTagDecision = 7402;  // coordinator -> participant: commit or cancel
constexpr int kTagUnion = 7403;     // MPI_Comm_create_group of the participants
constexpr int kTagStore = 7404;     // migration source -> replacement
constexpr int kTagVoteBase = 8000;  // + epoch % 8000: a late vote never matches a later agreement

constexpr std::int64_t kSpawnFirst = 2;  // first word of a probe's broadcast: spawn, then plan again

enum Reason : std::int64_t { kAgreed = 0, kTimeout = 1, kRefused = 2 };

// A positive integer from the environment, or `fallback` with one line on stderr when it is malformed.
long positiveFromEnvironment(const char *variable, long fallback, bool report)
{
	const char *text = std::getenv(variable);
	if (!text || !*text)
		return fallback;
	char *end = nullptr;
	errno = 0;
	const long value = std::strtol(text, &end, 10);
	if (errno || *end || value < 1) {
		if (report)
			std::fprintf(stderr, "malleo-pcm: %s=%s is not a positive integer; using %ld\n", variable,
				     text, fallback);
		return fallback;
	}
	return value;
}

double secondsFromEnvironment(const char *variable, double fallback, bool report)
{
	const char *text = std::getenv(variable);
	if (!text || !*text)
		return fallback;
	char *end = nullptr;
	errno = 0;
	const double value = std::strtod(text, &end);
	if (errno || *end || !(value > 0)) {
		if (report)
			std::fprintf(stderr, "malleo-pcm: %s=%s is not a positive number of seconds; using %g\n",
				     variable, text, fallback);
		return fallback;
	}
	return value;
}

// Where a buffer's elements start, past its leading halo.
void *pastHalo(const BufferMove &move, void *base)
{
	return base ? static_cast<unsigned char *>(base) + move.spec.halo * move.elementBytes() : nullptr;
}

// The bytes `schedule` delivers into `rank`'s new buffer of `move`: all it receives but the elements that stay where
// they are in a buffer kept in place.
std::int64_t delivered(const Schedule &schedule, int rank, const BufferMove &move)
{
	std::int64_t elements = 0;
	for (const Transfer &transfer : schedule.transfers) {
		if (transfer.to != rank)
			continue;
		forEachChunk(transfer, [&](std::int64_t source, std::int64_t destination, std::int64_t count) {
			if (transfer.from != rank || source != destination || move.new_data != move.old_data)
				elements += count;
		});
	}
	return elements * move.elementBytes();
}

bool contains(const std::vector<int> &list, int value)
{
	return std::find(list.begin(), list.end(), value) != list.end();
}

} // namespace

Mode modeFromEnvironment(bool report)
{
	const char *pool = std::getenv("MALLEO_POOL_ACTIVE");
	Mode chosen = pool && *pool ? Mode::pool : Mode::spawn;
	if (const char *mode = std::getenv("MALLEO_PCM_MODE"); mode && *mode) {
		if (std::strcmp(mode, "pool") == 0)
			chosen = Mode::pool;
		else if (std::strcmp(mode, "spawn") == 0)
			chosen = Mode::spawn;
		else if (report)
			std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_MODE=%s is not pool or spawn; using %s\n", mode,
				     chosen == Mode::pool ? "pool" : "spawn");
	}
	return chosen;
}

bool backgroundSpawnWanted()
{
#ifdef OPEN_MPI
	const char *spawn = std::getenv("MALLEO_PCM_SPAWN");
	return modeFromEnvironment(false) == Mode::spawn && !(spawn && std::strcmp(spawn, "wait") == 0);
#else
	return false;
#endif
}

std::string currentNode()
{
	if (const char *node = std::getenv("MALLEO_NODE"); node && *node)
		return node;
	char name[MPI_MAX_PROCESSOR_NAME] = {};
	int length = 0;
	MPI_Get_processor_name(name, &length);
	return std::string(name, static_cast<std::size_t>(length));
}

MPI_Datatype mpiType(BaseType type)
{
	switch (type) {
	case BaseType::int32:
		return MPI_INT32_T;
	case BaseType::int64:
		return MPI_INT64_T;
	case BaseType::float32:
		return MPI_FLOAT;
	case BaseType::float64:
		return MPI_DOUBLE;
	case BaseType::byte:
		break;
	}
	return MPI_BYTE;
}

std::size_t baseSize(BaseType type)
{
	switch (type) {
	case BaseType::int32:
	case BaseType::float32:
		return 4;
	case BaseType::int64:
	case BaseType::float64:
		return 8;
	case BaseType::byte:
		break;
	}
	return 1;
}

std::int64_t BufferMove::elementBytes() const
{
	return spec.element_length * static_cast<std::int64_t>(baseSize(spec.base));
}

namespace {

bool gHugePages = false;  // MALLEO_PCM_HUGE_PAGES=on (Session::configure)
bool gForMallocedBuffers = false;  // allocateForMallocedBuffers
bool gSharedPages = false;  // unless MALLEO_PCM_SHARED_PAGES=off (Session::configure)

} // namespace

bool sharesPages()
{
	return gSharedPages;
}

std::int64_t firstElement(Distribution distribution, const std::vector<std::int64_t> &counts, int slot)
{
	if (distribution != Distribution::block1d)
		return 0;
	return std::accumulate(counts.begin(), counts.begin() + slot, std::int64_t{0});
}

void *allocateElements(std::int64_t count, std::int64_t halo, std::int64_t element_bytes, bool zero_elements,
			std::int64_t first)
{
	const auto bytes = static_cast<std::size_t>((count + 2 * halo) * element_bytes) + 1;
	if (sharesPages() && bytes > kPageMoveMin)
		if (void *shared = allocateShared(bytes, sharedLead(first, halo, element_bytes)))
			return shared;  // reads as zeros
	const Placement placement = gForMallocedBuffers ? Placement::like_malloc :
				    gHugePages          ? Placement::huge_page :
							  Placement::page;
	return allocateBlock(count, halo, element_bytes, zero_elements, placement);
}

void releaseElements(void *block)
{
	if (!releaseShared(block))
		std::free(block);
}

void allocateForMallocedBuffers()
{
	gForMallocedBuffers = true;
}

Session &Session::get()
{
	static Session session;
	return session;
}

int Session::rank() const
{
	int rank = -1;
	if (active_ != MPI_COMM_NULL)
		MPI_Comm_rank(active_, &rank);
	return rank;
}

int Session::size() const
{
	return static_cast<int>(membership_.active.size());
}

int Session::start(int *argc, char ***argv)
{
	if (running())
		return MPI_SUCCESS;
	int initialized = 0;
	MPI_Initialized(&initialized);
	// What MPI_Comm_spawn needs to start this program again; MPI_Init may consume arguments.
	if (argc && argv && *argv)
		arguments_.assign(*argv + std::min(*argc, 1), *argv + *argc);
	// readlink does not terminate the path: its length is all there is (the bytes after it are the stack's).
	char exe[4096];
	if (const auto length = readlink("/proc/self/exe", exe, sizeof exe); length > 0)
		program_.assign(exe, static_cast<std::size_t>(length));
	if (!initialized) {
		// A background spawn calls MPI on a helper thread while the application's thread goes on using it.
		int provided = MPI_THREAD_SINGLE;
		const int rc = backgroundSpawnWanted() ? MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided)
						       : MPI_Init(argc, argv);
		if (rc != MPI_SUCCESS)
			return rc;
	}
	// The bridge's own use of MPI_COMM_WORLD below must reach the real one.
	publishWorld(MPI_COMM_NULL);
	self_ = thisThread();
	watchFinalize();
	MPI_Comm parent = MPI_COMM_NULL;
	MPI_Comm_get_parent(&parent);
	if (parent != MPI_COMM_NULL) {
		joinParents(parent);
		if (park() == ParkEnd::exit) {
			MPI_Finalize();
			std::exit(0);
		}
		return MPI_SUCCESS;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
	MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
	MPI_Comm_dup(MPI_COMM_WORLD, &control_);
	MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);

	// Every process reads the same environment; only world rank 0 reports what is wrong with it.
	const bool report = world_rank_ == 0;
	const long wanted = positiveFromEnvironment("MALLEO_POOL_ACTIVE", world_size_, report);
	const long active = std::min<long>(wanted, world_size_);
	if (report && wanted > active)
		std::fprintf(stderr, "malleo-pcm: MALLEO_POOL_ACTIVE=%ld is more than the %d processes launched; "
				     "all are active\n",
			     wanted, world_size_);
	configure(report);
	bindToNode();

	Places places = gatherPlaces(control_, self_);
	membership_.node = std::move(places.nodes);
	threads_ = std::move(places.threads);
	shareApplication();
	membership_.state.assign(static_cast<std::size_t>(world_size_), ProcessState::spare);
	membership_.active.clear();
	for (int w = 0; w < world_size_; ++w) {
		if (w < active) {
			membership_.state[static_cast<std::size_t>(w)] = ProcessState::active;
			membership_.active.push_back(w);
		}
	}
	const bool is_active = world_rank_ < active;
	MPI_Comm_split(control_, is_active ? 0 : MPI_UNDEFINED, world_rank_, &active_);
	if (is_active) {
		publishWorld(active_);
		return MPI_SUCCESS;
	}

	if (park() == ParkEnd::exit) {
		MPI_Finalize();
		std::exit(0);
	}
	return MPI_SUCCESS;
}

void Session::configure(bool report)
{
	if (const char *verbose = std::getenv("MALLEO_PCM_VERBOSE"))
		verbose_ = *verbose && std::strcmp(verbose, "0") != 0;
	agree_timeout_ = secondsFromEnvironment("MALLEO_AGREE_TIMEOUT", 10.0, report);
	if (auto error = commands_.configureFromEnvironment(); !error.empty() && report)
		std::fprintf(stderr, "malleo-pcm: %s; no forced operations\n", error.c_str());
	if (const char *faults = std::getenv("MALLEO_FAULT"); faults && *faults) {
		if (auto error = parseFaults(faults, faults_); !error.empty() && report)
			std::fprintf(stderr, "malleo-pcm: %s; no injected faults\n", error.c_str());
	}
	mode_ = modeFromEnvironment(report);
	int threads = MPI_THREAD_SINGLE;
	MPI_Query_thread(&threads);
	spawn_in_background_ = mode_ == Mode::spawn && backgroundSpawnWanted() && threads == MPI_THREAD_MULTIPLE;
	if (const char *spawn = std::getenv("MALLEO_PCM_SPAWN"); spawn && *spawn && report) {
		if (std::strcmp(spawn, "background") != 0 && std::strcmp(spawn, "wait") != 0)
			std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_SPAWN=%s is not background or wait; using background\n",
				     spawn);
		else if (mode_ == Mode::spawn && std::strcmp(spawn, "background") == 0 && !spawn_in_background_)
			std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_SPAWN=background needs Open MPI initialized with "
					     "MPI_THREAD_MULTIPLE; new processes start while the application waits\n");
	}
	const auto text = [](const char *variable) {
		const char *value = std::getenv(variable);
		return std::string(value ? value : "");
	};
	if (auto error = parseNodeMap(text("MALLEO_NODES"), text("MALLEO_NODE_AGENTS"), text("MALLEO_CLUSTER_DIR"),
				      nodes_);
	    !error.empty() && report)
		std::fprintf(stderr, "malleo-pcm: %s; no nodes described\n", error.c_str());
	configureWorldPublisher(report);
	gHugePages = false;
	if (const char *huge = std::getenv("MALLEO_PCM_HUGE_PAGES"); huge && *huge) {
		gHugePages = std::strcmp(huge, "on") == 0;
		if (!gHugePages && std::strcmp(huge, "off") != 0 && report)
			std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_HUGE_PAGES=%s is not on or off; using off\n", huge);
	}
	// On unless turned off: handing pages over is what makes a reconfiguration faster than copying into fresh memory
	// (docs/performance.md, "Shared blocks in the bridge"). Where memfd_create fails the blocks are private, said
	// only to whoever asked for shared ones.
	const char *shared = std::getenv("MALLEO_PCM_SHARED_PAGES");
	const bool asked = shared && std::strcmp(shared, "on") == 0;
	if (shared && *shared && !asked && std::strcmp(shared, "off") != 0 && report)
		std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_SHARED_PAGES=%s is not on or off; using on\n", shared);
	gSharedPages = !(shared && std::strcmp(shared, "off") == 0) && sharedPagesWork();
	if (asked && !gSharedPages && report)
		std::fprintf(stderr, "malleo-pcm: MALLEO_PCM_SHARED_PAGES=on, but memfd_create fails here; using off\n");
}

// Commands are left with the application's root agent, the one hosting world rank 0 of the launch, under the id
// the application registered there; whichever process coordinates asks that agent under that id. Its own
// registration may differ: a process of another MPI job (spawn mode) has its job's id, one on another node its
// node's agent.
void Session::shareApplication()
{
	// Whole, with no bound of its own to keep in step with libmalleo_pmpi's (kMaxAppId) or an endpoint's: an id cut
	// short would be polled under and never match.
	std::string text;  // id, NUL, local endpoint, NUL, remote endpoint
	if (world_rank_ == 0) {
		const RootAgent root = AgentCommands::registeredHere();
		text = root.app + '\0' + root.local + '\0' + root.remote;
	}
	std::int64_t size = static_cast<std::int64_t>(text.size());
	MPI_Bcast(&size, 1, MPI_INT64_T, 0, control_);
	text.resize(static_cast<std::size_t>(size));
	MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, control_);
	RootAgent root;
	std::string *fields[] = {&root.app, &root.local, &root.remote};
	std::size_t start = 0;
	for (std::string *field : fields) {
		const std::size_t end = std::min(text.find('\0', start), text.size());
		*field = text.substr(start, end - start);
		start = std::min(end + 1, text.size());
	}
	commands_.setApplication(std::move(root), onRootNode());
}

bool Session::onRootNode() const
{
	return membership_.node.empty() || membership_.node[0] == currentNode();
}

bool Session::leaving() const
{
	return plan_.op != Operation::none && contains(plan_.leavers, world_rank_);
}

bool Session::joining() const
{
	return plan_.op != Operation::none && contains(plan_.joiners, world_rank_);
}

void Session::fail(const std::string &why, bool print)
{
	error_ = std::string(operationName(plan_.op)) + " at iteration " + std::to_string(plan_.iteration) +
		 " failed: " + why + "; continuing with " + processCount(membership_.active.size());
	if (print)
		std::fprintf(stderr, "malleo-pcm: %s\n", error_.c_str());
	// Only the coordinator that took an agent's command for this probe sends anything.
	const auto processes = static_cast<std::int64_t>(membership_.active.size());
	commands_.finished(plan_.iteration, false, error_, processes, processes);
}

void Session::failUnplanned(Operation op, std::int64_t iteration, const std::string &why)
{
	plan_ = Plan{};
	plan_.op = op;
	plan_.iteration = iteration;
	fail(why, rank() == 0);
	plan_.op = Operation::none;
}

Outcome Session::decide()
{
	if (skip_probe_) {
		skip_probe_ = false;
		return Outcome::none;
	}
	phaseTimes().start();
	const std::int64_t iteration = probes_++;
	// A command whose processes are starting in the background is planned once they are there.
	Command resumed;
	bool spawned = false;
	if (background_) {
		switch (backgroundSpawnAtProbe(iteration, resumed)) {
		case SpawnState::starting:
			return Outcome::none;
		case SpawnState::failed:
			return Outcome::failed;
		case SpawnState::ready:
			spawned = true;
			break;
		}
	}
	// In spawn mode a command may first need processes started; then it is planned again, once, with them.
	for (;; spawned = true) {
		const std::size_t words = planWords(world_size_);
		std::vector<std::int64_t> message(words + 1, 0);
		std::string refusal;
		std::string spawn_node;
		Command command;
		if (rank() == 0) {
			// One call answers "what now?": MALLEO_FORCE first, then the local agent (command_source.h).
			command = resumed.op != Operation::none ? resumed : commands_.next(iteration, size());
			Plan plan;
			const int spawns = spawned ? 0 : spawnsNeeded(command, spawn_node, refusal);
			if (spawns > 0) {
				message[0] = kSpawnFirst;
				message[1] = spawns;
				message[2] = faults_.spawn.count(iteration) ? 1 : 0;
				message[3] = static_cast<std::int64_t>(command.op);
			} else {
				if (refusal.empty())
					refusal = makePlan(command, membership_, plan);
				plan.epoch = epoch_;
				if (!refusal.empty()) {
					message[0] = 1;
					plan.op = command.op;
					plan.iteration = iteration;
				}
				const auto encoded = encodePlan(plan, membership_);
				std::copy(encoded.begin(), encoded.end(), message.begin() + 1);
			}
		}
		MPI_Bcast(message.data(), static_cast<int>(message.size()), MPI_INT64_T, 0, active_);
		if (message[0] == kSpawnFirst) {
			std::vector<char> node(kNodeNameBytes, 0);
			if (rank() == 0)
				std::strncpy(node.data(), spawn_node.c_str(), node.size() - 1);
			MPI_Bcast(node.data(), kNodeNameBytes, MPI_CHAR, 0, active_);
			const int root = membership_.active.front();
			const int count = static_cast<int>(message[1]);
			if (!message[2] && spawn_in_background_) {
				spawnInBackground(root, count, node.data(), command, iteration);
				return Outcome::none;
			}
			std::string why = "injected spawn fault";
			if (!message[2] && spawnFromProbe(root, count, node.data(), command, why))
				continue;
			failUnplanned(static_cast<Operation>(message[3]), iteration,
				      "spawning " + std::to_string(count) + " processes on node '" + node.data() +
					      "' failed: " + why);
			return Outcome::failed;
		}
		Membership received = membership_;
		decodePlan({message.begin() + 1, message.end()}, plan_, received);
		if (message[0]) {
			std::vector<char> text(512, 0);
			if (rank() == 0)
				std::strncpy(text.data(), refusal.c_str(), text.size() - 1);
			MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, active_);
			fail(text.data(), rank() == 0);
			plan_.op = Operation::none;
			return Outcome::failed;
		}
		break;
	}
	if (plan_.op == Operation::none)
		return Outcome::none;
	epoch_ = plan_.epoch + 1;
	return agree() ? Outcome::agreed : Outcome::failed;
}

// Seed 000's protocol: the coordinator asks every participant; each answers isMalleable or isUnmalleable; the
// coordinator commits only when all said yes within the timeout, and otherwise cancels, so no participant moves
// unless all move.
bool Session::agree()
{
	const int coordinator = plan_.before.front();
	std::vector<int> others = participants(plan_);
	others.erase(std::remove(others.begin(), others.end(), coordinator), others.end());
	if (world_rank_ != coordinator)
		return participantVote(false);

	const std::size_t words = planWords(world_size_);
	std::vector<std::int64_t> prepare(words + 1, 0);
	prepare[0] = kPrepare;
	const auto encoded = encodePlan(plan_, membership_);
	std::copy(encoded.begin(), encoded.end(), prepare.begin() + 1);
	const double deadline = MPI_Wtime() + agree_timeout_;  // a joiner that died holds up its plan until then
	sendToParked(plan_.joiners, prepare);

	const int tag = kTagVoteBase + static_cast<int>(plan_.epoch % 8000);
	std::vector<std::array<std::int64_t, 2>> votes(others.size());
	std::vector<MPI_Request> requests(others.size(), MPI_REQUEST_NULL);
	for (std::size_t i = 0; i < others.size(); ++i)
		MPI_Irecv(votes[i].data(), 2, MPI_INT64_T, others[i], tag, control_, &requests[i]);

	std::int64_t reason = kAgreed;
	std::int64_t culprit = -1;
	for (std::size_t i = 0; i < others.size(); ++i) {
		const double left = std::max(0.0, deadline - MPI_Wtime());
		if (!waitSleepingFor(&requests[i], MPI_STATUS_IGNORE, left)) {
			if (reason == kAgreed) {
				reason = kTimeout;
				culprit = others[i];
			}
			MPI_Cancel(&requests[i]);
			MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
		} else if (votes[i][1] != 1 && reason == kAgreed) {
			reason = kRefused;
			culprit = others[i];
		}
	}
	// A participant that died does not take its decision: over TCP (to a spawned process) a blocking send to it
	// would wait forever.
	const std::int64_t decision[3] = {plan_.epoch, reason, culprit};
	std::vector<MPI_Request> sends(others.size());
	for (std::size_t i = 0; i < others.size(); ++i)
		MPI_Isend(decision, 3, MPI_INT64_T, others[i], kTagDecision, control_, &sends[i]);
	for (int w : plan_.joiners)
		wake(w);  // they wait for the decision sleeping
	completeSendsFor(sends, agree_timeout_);
	if (reason == kAgreed)
		return true;
	char why[256];
	if (reason == kTimeout)
		std::snprintf(why, sizeof why, "world rank %lld did not answer the agreement within %g s",
			      static_cast<long long>(culprit), agree_timeout_);
	else
		std::snprintf(why, sizeof why, "world rank %lld answered isUnmalleable",
			      static_cast<long long>(culprit));
	fail(why, true);
	return false;
}

// A participant's side: answer, then wait for the decision. A parked joiner waits sleeping; an active process
// waits in MPI_Recv, which lasts at most the agreement timeout.
bool Session::participantVote(bool sleeping)
{
	const int coordinator = plan_.before.front();
	std::vector<int> others = participants(plan_);
	others.erase(std::remove(others.begin(), others.end(), coordinator), others.end());
	const bool designated = !others.empty() && others.back() == world_rank_;
	const bool silent = designated && faults_.agree_timeout.count(plan_.iteration);
	const bool refuse = designated && faults_.refuse.count(plan_.iteration);
	if (designated && faults_.die.count(plan_.iteration))
		raise(SIGKILL);
	if (!silent) {
		const std::int64_t vote[2] = {plan_.epoch, refuse ? 0 : 1};
		MPI_Send(vote, 2, MPI_INT64_T, coordinator,
			 kTagVoteBase + static_cast<int>(plan_.epoch % 8000), control_);
	}
	std::int64_t decision[3] = {0, 0, 0};
	if (sleeping) {
		MPI_Request request;
		MPI_Irecv(decision, 3, MPI_INT64_T, coordinator, kTagDecision, control_, &request);
		waitSleeping(&request, MPI_STATUS_IGNORE, 2000);
	} else {
		MPI_Recv(decision, 3, MPI_INT64_T, coordinator, kTagDecision, control_, MPI_STATUS_IGNORE);
	}
	if (decision[1] == kAgreed)
		return true;
	char why[256];
	if (decision[1] == kTimeout)
		std::snprintf(why, sizeof why, "world rank %lld did not answer the agreement within %g s",
			      static_cast<long long>(decision[2]), agree_timeout_);
	else
		std::snprintf(why, sizeof why, "world rank %lld answered isUnmalleable",
			      static_cast<long long>(decision[2]));
	fail(why, false);
	return false;
}

Session::ParkEnd Session::park()
{
	// The coordinator wakes a parked process on its host after each message to it (wake()).
	const WakeUpSignal wake_up;
	publishActive(false);
	const std::size_t words = planWords(world_size_);
	for (;;) {
		std::vector<std::int64_t> message(words + 1, 0);
		MPI_Request request;
		MPI_Irecv(message.data(), static_cast<int>(message.size()), MPI_INT64_T, MPI_ANY_SOURCE, kTagParked,
			  control_, &request);
		waitSleeping(&request, MPI_STATUS_IGNORE);
		if (message[0] == kExit) {
			ended_ = true;
			return ParkEnd::exit;
		}
		if (message[0] == kSpawn) {
			const int root = static_cast<int>(message[1]);
			std::vector<char> node(kNodeNameBytes, 0);
			MPI_Recv(node.data(), kNodeNameBytes, MPI_CHAR, root, kTagParked, control_, MPI_STATUS_IGNORE);
			std::string why;
			spawnCollective(root, static_cast<int>(message[2]), node.data(), Command{}, why);
			continue;
		}
		decodePlan({message.begin() + 1, message.end()}, plan_, membership_);
		if (!participantVote(true)) {
			dropPrepared();  // the operation it was started for will not happen
			continue;
		}
		probes_ = plan_.iteration + 1;
		epoch_ = plan_.epoch + 1;
		std::vector<BufferMove> moves;
		if (!reconfigure(moves, {}, {}))
			continue;
		joined_buffers_ = std::move(moves);
		skip_probe_ = true;
		start_status_ = plan_.op == Operation::migrate ? StartStatus::migrated : StartStatus::splitted;
		publishActive(true);
		return ParkEnd::joined;
	}
}

int Session::unionRank(const std::vector<int> &all, int world_rank) const
{
	return static_cast<int>(std::lower_bound(all.begin(), all.end(), world_rank) - all.begin());
}

bool Session::reconfigure(std::vector<BufferMove> &moves, const Store &replicated, const Store &store)
{
	phaseTimes().mark(Phase::agreement);
	// The active communicator is replaced below: no MPI_COMM_WORLD of the application may point at it meanwhile.
	publishWorld(MPI_COMM_NULL);
	const std::vector<int> all = participants(plan_);
	const bool joiner = joining();
	MPI_Group world_group, union_group;
	MPI_Comm_group(control_, &world_group);
	MPI_Group_incl(world_group, static_cast<int>(all.size()), all.data(), &union_group);
	MPI_Comm union_comm = MPI_COMM_NULL;
	int rc = MPI_Comm_create_group(control_, union_group, kTagUnion, &union_comm);
	MPI_Group_free(&union_group);
	MPI_Group_free(&world_group);
	if (rc != MPI_SUCCESS) {
		fail("could not build the communicator of the participants", true);
		publishWorld(active_);
		return false;
	}
	MPI_Comm_set_errhandler(union_comm, MPI_ERRORS_RETURN);
	const int root = unionRank(all, plan_.before.front());
	int me = 0;
	MPI_Comm_rank(union_comm, &me);
	phaseTimes().mark(Phase::activation);

	// The manifest: what the joiners must allocate, and the replicated values.
	std::vector<unsigned char> manifest;
	if (me == root)
		manifest = encodeManifest(moves, replicated);
	std::int64_t manifest_size = static_cast<std::int64_t>(manifest.size());
	MPI_Bcast(&manifest_size, 1, MPI_INT64_T, root, union_comm);
	manifest.resize(static_cast<std::size_t>(manifest_size));
	MPI_Bcast(manifest.data(), static_cast<int>(manifest_size), MPI_BYTE, root, union_comm);
	int error = 0;
	std::string why;
	if (joiner) {
		std::vector<BufferSpec> specs;
		if (!decodeManifest(manifest, specs, joined_replicated_)) {
			error = 1;
			why = "malformed manifest";
		}
		moves.assign(specs.size(), {});
		for (std::size_t i = 0; i < specs.size(); ++i)
			moves[i].spec = specs[i];
	}

	const auto slot_after = std::find(plan_.after.begin(), plan_.after.end(), world_rank_);
	const int new_slot = slot_after == plan_.after.end() ? -1 : static_cast<int>(slot_after - plan_.after.begin());
	std::vector<Schedule> schedules(moves.size());
	// The trailing halos of blocks grown in place, which the elements received past them overwrite: put back if
	// the operation fails, so that the program carries on with its buffers as they were.
	std::vector<std::vector<unsigned char>> overwritten_halos(moves.size());
	// Pages taken over from shared blocks, each buffer's pending until every process knows the move succeeded.
	std::vector<TakenPages> taken(moves.size());
	std::int64_t moved = 0;  // bytes this process sent to others
	std::int64_t prepared = 0;  // bytes of its new buffers this process had allocated and faulted in while it started
	for (auto &move : moves) {
		const std::size_t index = static_cast<std::size_t>(&move - moves.data());
		const std::int64_t bytes = move.elementBytes();
		// Each process's count, and whether it makes shared blocks: if any does, all of them look for pages to
		// take over (a collective, so the setting of one process decides for all).
		std::vector<std::int64_t> counts(2 * all.size(), 0);
		const bool shares = sharesPages() || insideShared(move.old_data, 1) || insideShared(move.new_data, 1);
		const std::int64_t mine[2] = {joiner ? 0 : move.old_count, shares};
		MPI_Allgather(mine, 2, MPI_INT64_T, counts.data(), 2, MPI_INT64_T, union_comm);
		bool any_shares = false;
		for (std::size_t r = 0; r < all.size(); ++r)
			any_shares = any_shares || counts[2 * r + 1];
		Layout from, to;
		from.distribution = to.distribution = move.spec.distribution;
		for (int w : plan_.before) {
			from.ranks.push_back(unionRank(all, w));
			from.counts.push_back(counts[2 * static_cast<std::size_t>(unionRank(all, w))]);
			from.global_count += from.counts.back();
		}
		for (int w : plan_.after)
			to.ranks.push_back(unionRank(all, w));
		to.global_count = from.global_count;
		to.counts = targetCounts(to.global_count, static_cast<int>(plan_.after.size()), plan_.weights);
		move.new_count = new_slot < 0 ? 0 : to.counts[static_cast<std::size_t>(new_slot)];
		if (new_slot >= 0 && move.new_data && move.capacity >= 0 && move.new_count > move.capacity) {
			error = 1;
			why = move.spec.name + " needs room for " + std::to_string(move.new_count) + " elements, the buffer holds " +
			      std::to_string(move.capacity);
		}

		Schedule &schedule = schedules[index];
		try {
			schedule = pcm::schedule(from, to);
		} catch (const std::exception &e) {
			error = 1;
			why = e.what();
		}
		const std::int64_t room = std::max(move.old_count, move.old_capacity);
		if (new_slot >= 0 && !move.new_data && move.in_place && move.old_data && move.new_count <= room &&
		    keepsInPlace(schedule, me, move.old_count)) {
			move.new_data = move.old_data;
			if (move.new_count > move.old_count) {
				const auto *halo = static_cast<const unsigned char *>(pastHalo(move, move.old_data)) +
						   move.old_count * bytes;
				overwritten_halos[index].assign(halo, halo + move.spec.halo * bytes);
			}
		} else if (new_slot >= 0 && !move.new_data) {
			move.new_data = takePrepared(move);
			prepared += move.new_data ? move.new_count * bytes : 0;
			if (!move.new_data)
				move.new_data = allocateElements(move.new_count, move.spec.halo, bytes, false,
								 firstElement(move.spec.distribution, to.counts, new_slot));
			move.allocated = true;
			if (!move.new_data) {
				error = 1;
				why = "out of memory for " + move.spec.name;
			}
		}
		MPI_Datatype element;
		MPI_Type_contiguous(static_cast<int>(move.spec.element_length), mpiType(move.spec.base), &element);
		MPI_Type_commit(&element);
		// A process that cannot take part (no memory, bad schedule) would leave its peers waiting for
		// transfers that never come: all of them skip the move together.
		int anyone = error;
		MPI_Allreduce(MPI_IN_PLACE, &anyone, 1, MPI_INT, MPI_MAX, union_comm);
		if (!anyone && any_shares) {
			Schedule rest;
			rc = takePages(union_comm, me, schedule, pastHalo(move, move.old_data), joiner ? 0 : move.old_count,
				       pastHalo(move, move.new_data), move.new_count, static_cast<std::size_t>(bytes),
				       taken[index], rest);
			schedule = std::move(rest);  // what is left to copy, here and in finishLocal
			if (rc != MPI_SUCCESS) {
				error = 1;
				why = "taking over the pages of " + move.spec.name + " failed";
			}
		}
		if (!anyone) {
			ExecuteOptions options;
			options.defer_local = move.discard_old;
			options.held = move.old_count;
			const ExecuteResult result = execute(union_comm, schedule, pastHalo(move, move.old_data),
							     pastHalo(move, move.new_data), element, options);
			moved += result.bytes_sent;
			if (result.mpi_error != MPI_SUCCESS) {
				error = 1;
				why = "moving " + move.spec.name + " failed (MPI error " +
				      std::to_string(result.mpi_error) + ")";
			}
		}
		MPI_Type_free(&element);
	}

	dropPrepared();  // blocks prepared for another plan than this one's are of no use now

	if (plan_.op == Operation::migrate) {
		for (std::size_t i = 0; i < plan_.leavers.size(); ++i) {
			if (world_rank_ == plan_.leavers[i]) {
				const auto bytes = encodeStore(store);
				std::int64_t size = static_cast<std::int64_t>(bytes.size());
				const int to = unionRank(all, plan_.joiners[i]);
				MPI_Send(&size, 1, MPI_INT64_T, to, kTagStore, union_comm);
				MPI_Send(bytes.data(), static_cast<int>(size), MPI_BYTE, to, kTagStore, union_comm);
				moved += size;
			} else if (world_rank_ == plan_.joiners[i]) {
				std::int64_t size = 0;
				const int from = unionRank(all, plan_.leavers[i]);
				MPI_Recv(&size, 1, MPI_INT64_T, from, kTagStore, union_comm, MPI_STATUS_IGNORE);
				std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
				MPI_Recv(bytes.data(), static_cast<int>(size), MPI_BYTE, from, kTagStore, union_comm,
					 MPI_STATUS_IGNORE);
				if (!decodeStore(bytes, joined_store_)) {
					error = 1;
					why = "malformed migration store";
				}
			}
		}
	}
	if (faults_.redistribute.count(plan_.iteration) && all.back() == world_rank_ &&
	    all.back() != plan_.before.front()) {
		error = 1;
		why = "injected redistribution fault";
	}

	// Whether anyone failed, with the reason of the lowest such rank, so every process reports the same.
	struct {
		int failed;
		int rank;
	} local = {error, error ? me : static_cast<int>(all.size())}, global = {0, 0};
	MPI_Allreduce(&local, &global, 1, MPI_2INT, MPI_MAXLOC, union_comm);
	if (!global.failed) {
		// Every process knows the data moved: the old buffers may give up their pages (finishLocal).
		std::int64_t totals[4] = {moved, prepared, 0, 0};
		for (std::size_t i = 0; i < moves.size(); ++i) {
			totals[2] += taken[i].bytesTaken();
			totals[3] += delivered(schedules[i], me, moves[i]);
		}
		MPI_Allreduce(MPI_IN_PLACE, totals, 4, MPI_INT64_T, MPI_SUM, union_comm);
		moved = totals[0];
		phaseTimes().prepared(totals[1]);
		phaseTimes().taken(totals[2], totals[3]);
		for (std::size_t i = 0; i < moves.size(); ++i) {
			BufferMove &move = moves[i];
			// Before keep(): an element at the end of a run taken over as pages straddles one of them, and is
			// copied whole from the old block, which maps fresh pages where it gave some away once kept.
			const std::int64_t pages = !move.discard_old ? 0 :
				finishLocal(schedules[i], me, pastHalo(move, move.old_data), pastHalo(move, move.new_data),
					    static_cast<std::size_t>(move.elementBytes()));
			taken[i].keep();
			const bool in_place = move.new_data && move.new_data == move.old_data;
			phaseTimes().kept(in_place ? std::min(move.new_count, move.old_count) * move.elementBytes() : 0, pages);
			if (in_place && move.new_count > move.old_count)  // zeroed, as allocateElements leaves a halo
				std::memset(static_cast<unsigned char *>(pastHalo(move, move.new_data)) +
						    move.new_count * move.elementBytes(),
					    0, static_cast<std::size_t>(move.spec.halo * move.elementBytes()));
		}
	}
	phaseTimes().mark(Phase::redistribution);
	if (global.failed) {
		std::vector<char> text(256, 0);
		if (me == global.rank)
			std::strncpy(text.data(), why.c_str(), text.size() - 1);
		MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, global.rank, union_comm);
		for (auto &move : moves) {
			// Before the halo goes back: a block grown in place maps its own pages again where it took others'.
			taken[static_cast<std::size_t>(&move - moves.data())].abandon();
			const auto &halo = overwritten_halos[static_cast<std::size_t>(&move - moves.data())];
			if (!halo.empty())
				std::memcpy(static_cast<unsigned char *>(pastHalo(move, move.old_data)) +
						    move.old_count * move.elementBytes(),
					    halo.data(), halo.size());
			if (move.allocated)
				releaseElements(move.new_data);
			if (move.allocated || move.new_data == move.old_data)
				move.new_data = nullptr;
			move.allocated = false;
		}
		MPI_Comm_free(&union_comm);
		fail(std::string(text.data()) + " (on world rank " + std::to_string(all[static_cast<std::size_t>(global.rank)]) + ")",
		     world_rank_ == plan_.before.front());
		publishWorld(active_);
		return false;
	}

	MPI_Comm next = MPI_COMM_NULL;
	MPI_Comm_split(union_comm, new_slot >= 0 ? 0 : MPI_UNDEFINED, new_slot, &next);
	MPI_Comm_free(&union_comm);
	if (active_ != MPI_COMM_NULL)
		MPI_Comm_free(&active_);
	active_ = next;
	publishWorld(active_);
	applyPlan(plan_, membership_);
	phaseTimes().mark(Phase::rebuild);
	if (world_rank_ == plan_.before.front())
		phaseTimes().report(operationName(plan_.op), plan_.iteration, plan_.before.size(),
				    plan_.after.size(), verbose_);
	commands_.finished(plan_.iteration, true, "", static_cast<std::int64_t>(plan_.before.size()),
			   static_cast<std::int64_t>(plan_.after.size()), moved);
	if (verbose_ && world_rank_ == plan_.after.front()) {
		std::string ranks;
		for (int w : plan_.after)
			ranks += (ranks.empty() ? "" : ",") + std::to_string(w);
		std::fprintf(stderr, "malleo-pcm: %s at iteration %lld: %zu -> %zu processes (world ranks %s)\n",
			     operationName(plan_.op), static_cast<long long>(plan_.iteration), plan_.before.size(),
			     plan_.after.size(), ranks.c_str());
	}
	return true;
}

std::int64_t Session::countAfter(std::int64_t local_count)
{
	std::int64_t total = 0;
	MPI_Allreduce(&local_count, &total, 1, MPI_INT64_T, MPI_SUM, active_);
	const auto slot = std::find(plan_.after.begin(), plan_.after.end(), world_rank_);
	if (slot == plan_.after.end())
		return 0;
	return targetCounts(total, static_cast<int>(plan_.after.size()), plan_.weights)[static_cast<std::size_t>(
		slot - plan_.after.begin())];
}

std::vector<std::int64_t> Session::currentCounts(std::int64_t total) const
{
	return targetCounts(total, size(), membership_.weights);
}

bool Session::parkAfterLeaving()
{
	const std::int64_t left_at = plan_.iteration;
	publishWorld(MPI_COMM_NULL);
	// What a previous activation left here belongs to buffers the program has since replaced.
	for (auto &move : joined_buffers_)
		if (move.allocated)
			releaseElements(move.new_data);  // null once the program has taken it
	joined_buffers_.clear();
	joined_replicated_.clear();
	joined_store_.clear();
	if (park() == ParkEnd::exit)
		return false;
	// Unlike a spare process returning from start(), this one is inside the very probe that activated it: its
	// program computes that iteration next, and its next probe is a real one.
	skip_probe_ = false;
	if (verbose_)
		std::fprintf(stderr, "malleo-pcm: world rank %d activated again at iteration %lld (%s; it left at "
				     "iteration %lld)\n",
			     world_rank_, static_cast<long long>(plan_.iteration), operationName(plan_.op),
			     static_cast<long long>(left_at));
	return true;
}

void Session::waitForEnd()
{
	if (ended_)
		return;
	publishWorld(MPI_COMM_NULL);
	while (park() != ParkEnd::exit) {
		// Only processes in state left call this (the C API's leavers, a C++ process that ended parked returns
		// above): no plan names them, so nothing but the end arrives here.
	}
}

void Session::finish()
{
	if (active_ == MPI_COMM_NULL)
		return;
	// Processes still starting are merged in first, so that they too learn that the run has ended.
	if (const auto spawn = std::move(background_)) {
		std::string why;
		completeBackgroundSpawn(*spawn, why);
		failUnplanned(spawn->command.op, spawn->iteration, "the run ended while its new processes were starting");
	}
	MPI_Barrier(active_);
	if (rank() != 0)
		return;
	std::vector<std::int64_t> message(planWords(world_size_) + 1, 0);
	message[0] = kExit;
	for (int w : sendToParked(parked(), message))
		std::fprintf(stderr, "malleo-pcm: world rank %d, parked, did not take the end of the run within %g s; "
				     "finalizing without it\n", w, agree_timeout_);
}

std::vector<int> Session::parked() const
{
	std::vector<int> ranks;
	for (int w = 0; w < world_size_; ++w)
		if (membership_.state[static_cast<std::size_t>(w)] != ProcessState::active)
			ranks.push_back(w);
	return ranks;
}

// Open MPI completes a blocking send of more than 256 bytes (the shared-memory transport's inline limit) only once
// the receiver has taken it: a parked receiver takes it at its next test, up to 16 ms later, measured at 12-16 ms
// per message. So the sends start, the receivers are woken, and then the sends complete.
std::vector<int> Session::sendToParked(const std::vector<int> &ranks, const std::vector<std::int64_t> &message,
				       const std::vector<char> &text)
{
	std::vector<MPI_Request> requests;  // per rank: the message's, then the text's
	for (int w : ranks) {
		requests.emplace_back();
		MPI_Isend(message.data(), static_cast<int>(message.size()), MPI_INT64_T, w, kTagParked, control_,
			  &requests.back());
		requests.emplace_back(MPI_REQUEST_NULL);
		if (!text.empty())
			MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, w, kTagParked, control_,
				  &requests.back());
	}
	for (int w : ranks)
		wake(w);
	std::vector<int> missing;
	for (std::size_t i : completeSendsFor(requests, agree_timeout_))
		if (missing.empty() || missing.back() != ranks[i / 2])
			missing.push_back(ranks[i / 2]);
	return missing;
}

void Session::wake(int world_rank) const
{
	if (world_rank >= 0 && static_cast<std::size_t>(world_rank) < threads_.size())
		wakeParked(threads_[static_cast<std::size_t>(world_rank)]);
}

Places gatherPlaces(MPI_Comm control, const ThreadAddress &self)
{
	struct Place {
		char node[kNodeNameBytes];
		std::int64_t host, pid, tid;
	};
	Place mine{};
	std::strncpy(mine.node, currentNode().c_str(), kNodeNameBytes - 1);
	mine.host = self.host;
	mine.pid = self.pid;
	mine.tid = self.tid;
	int size = 0;
	MPI_Comm_size(control, &size);
	std::vector<Place> all(static_cast<std::size_t>(size));
	MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, control);
	Places places;
	for (const Place &place : all) {
		places.nodes.emplace_back(place.node);
		places.threads.push_back({place.host, place.pid, place.tid});
	}
	return places;
}

} // namespace malleo::pcm
