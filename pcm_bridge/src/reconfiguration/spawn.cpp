// SPDX-License-Identifier: Apache-2.0
// Spawn mode: a split or migration that needs more processes than the spare ones starts them with MPI_Comm_spawn
// on the target node and merges them in as spare processes of the highest world ranks; planning then treats them
// as it treats a pool's spare processes (joiners after the processes whose blocks they share, or in a migration
// source's slot), so rank order and block adjacency hold. Every process of the control communicator takes part in
// the spawn, the parked ones too, because the control communicator that reaches all of them is what grows.
#include "reconfiguration/reconfigurator.h"

#include <algorithm>
#include <cstring>

#include "reconfiguration/manifest.h"
#include "reconfiguration/phase_times.h"
#include "reconfiguration/tags.h"

namespace malleo::pcm {

int Reconfigurator::spawnsNeeded(const Command &command, std::string &node, std::string &refusal)
{
	if (settings_.mode != Mode::Spawn || (command.op != Operation::Split && command.op != Operation::Migrate))
		return 0;
	int available = 0;
	for (std::size_t w = 0; w < membership_.state.size(); ++w)
		if (membership_.state[w] == ProcessState::Spare &&
		    (command.node.empty() ? membership_.node[w] != command.from : membership_.node[w] == command.node))
			++available;
	if (available >= command.count)
		return 0;
	// The node may have joined the cluster after the launch (`malleo cluster add`): its CPUs and agent are in
	// cluster.json, read now and not only at the start.
	[[maybe_unused]] const std::string unread = addClusterFileNodes(settings_.nodes);
	// Unnamed: the coordinator's node, unless the processes leave it; then the first other node described.
	node = command.node.empty() ? membership_.node[static_cast<std::size_t>(worldRank_)] : command.node;
	if (!command.from.empty() && node == command.from) {
		node.clear();
		for (const auto &[name, info] : settings_.nodes.nodes)
			if (name != command.from) {
				node = name;
				break;
			}
		if (node.empty()) {
			refusal = std::string(operationName(command.op)) + " of " + std::to_string(command.count) +
				  " off node '" + command.from + "': no other node is known to spawn on (MALLEO_NODES)";
			return 0;
		}
	}
	const std::string what = std::string(operationName(command.op)) + " of " + std::to_string(command.count);
#ifndef OPEN_MPI
	refusal = what + ": spawn mode needs Open MPI (this MPI cannot spawn); use pool mode (MALLEO_POOL_ACTIVE)";
	return 0;
#else
	if (settings_.nodes.described && !settings_.nodes.nodes.count(node)) {
		std::string known;
		for (const auto &[name, info] : settings_.nodes.nodes)
			known += (known.empty() ? "" : ", ") + name;
		refusal = what + ": no node '" + node + "' in MALLEO_NODES (" + known + ")" +
			  (settings_.nodes.clusterDir.empty() ? "" : " nor in the cluster's cluster.json") +
			  (unread.empty() ? "" : " (" + unread + ")");
		return 0;
	}
	if (const std::string host = spawnHost(node);
	    !host.empty() && !settings_.nodes.launchHosts.empty() &&
	    std::find(settings_.nodes.launchHosts.begin(), settings_.nodes.launchHosts.end(), host) ==
		    settings_.nodes.launchHosts.end()) {
		refusal = what + ": node '" + node + "' is on host '" + host +
			  "', which is not in this run's hostfile (MALLEO_HOSTS): Open MPI cannot start processes on a host "
			  "added after the launch; make the hosts first (`malleo cluster up --nodes N --hosts K`)";
		return 0;
	}
	if (program_.empty()) {
		refusal = what + ": this program's path is unknown (/proc/self/exe), so it cannot be spawned";
		return 0;
	}
	return command.count - available;
#endif
}

void Reconfigurator::wakeParkedForSpawn(int root, int count, const std::string &node)
{
	if (worldRank_ != root)
		return;
	std::vector<std::int64_t> message(planWords(worldSize_) + 1, 0);
	message[0] = kSpawn;
	message[1] = root;
	message[2] = count;
	std::vector<char> name(kNodeNameBytes, 0);
	std::strncpy(name.data(), node.c_str(), name.size() - 1);
	sendToParked(parked(), message, name);
}

bool Reconfigurator::spawnFromProbe(int root, int count, const std::string &node, const Command &command, std::string &why)
{
	// The probe's broadcast so far is agreement; the spawn, waking the parked processes included, is timed apart.
	phaseTimes().mark(Phase::Agreement);
	wakeParkedForSpawn(root, count, node);
	const bool spawned = spawnCollective(root, count, node, command, why);
	phaseTimes().mark(Phase::Spawn);
	return spawned;
}

void Reconfigurator::spawnInBackground(int root, int count, const std::string &node, const Command &command,
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
	spawn.probeInterval = phaseTimes().probeInterval();
	// Everything the thread reads is copied here: the main thread goes on with the application meanwhile, and
	// touches neither control_ nor the membership until it has joined the thread (completeBackgroundSpawn).
	spawn.thread = std::thread([&spawn, control = control_, root, count, words = spawnArguments(node),
				    rank = worldRank_, self = self_, host = spawnHost(node),
				    prepared = worldRank_ == root ? preparation(command, count, node) : SpawnPreparation{}] {
		spawn.outcome = startProcesses(control, root, count, words, rank, self, prepared, host);
		spawn.done.store(true, std::memory_order_release);
	});
}

Reconfigurator::SpawnState Reconfigurator::backgroundSpawnAtProbe(std::int64_t iteration, Command &resumed)
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
		return SpawnState::Starting;
	if (!message[0]) {
		// One operation at a time, as the agent's lock has it: the forced command is refused, not queued.
		failUnplanned(static_cast<Operation>(message[1]), iteration,
			      "busy: the " + std::string(operationName(background_->command.op)) + " of iteration " +
				      std::to_string(background_->iteration) + " is still starting its processes");
		return SpawnState::Failed;
	}
	const auto spawn = std::move(background_);
	// The agent's command was taken at the probe that started the spawn; its outcome comes from this one.
	commands_.deferred(spawn->iteration, iteration);
	resumed = spawn->command;
	const double overlapped = MPI_Wtime() - spawn->started;
	std::string why;
	const bool ok = completeBackgroundSpawn(*spawn, why);
	phaseTimes().mark(Phase::Agreement);
	phaseTimes().overlapped(overlapped, iteration - spawn->iteration, spawn->probeInterval);
	if (ok)
		return SpawnState::Ready;
	failUnplanned(resumed.op, iteration,
		      "spawning " + std::to_string(spawn->count) + " processes on node '" + spawn->node +
			      "' failed: " + why);
	return SpawnState::Failed;
}

bool Reconfigurator::completeBackgroundSpawn(BackgroundSpawn &spawn, std::string &why)
{
	spawn.thread.join();
	return installSpawn(std::move(spawn.outcome), why);
}

bool Reconfigurator::spawnCollective(int root, int count, const std::string &node, const Command &command, std::string &why)
{
	return installSpawn(startProcesses(control_, root, count, spawnArguments(node), worldRank_, self_,
					   worldRank_ == root ? preparation(command, count, node) : SpawnPreparation{},
					   spawnHost(node)),
			    why);
}

std::string Reconfigurator::spawnHost(const std::string &node) const
{
	const auto found = settings_.nodes.nodes.find(node);
	return found == settings_.nodes.nodes.end() ? std::string() : found->second.host;
}

void Reconfigurator::expectBuffer(const BufferSpec &spec, std::int64_t global_count)
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
SpawnPreparation Reconfigurator::preparation(const Command &command, int count, const std::string &node) const
{
	SpawnPreparation out;
	if (expected_.empty())
		return out;
	Membership future = membership_;
	future.state.resize(static_cast<std::size_t>(worldSize_ + count), ProcessState::Spare);
	future.node.resize(static_cast<std::size_t>(worldSize_ + count), node);
	Plan plan; // for its slots and shares only: the probe it names is not used
	if (!makePlan(command, 0, future, plan).empty())
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
		const int slot = slotAfter(plan, worldSize_ + c);
		for (const auto &counts : shares)
			out.counts.push_back(slot < 0 ? 0 : counts[static_cast<std::size_t>(slot)]);
	}
	return out;
}

std::vector<std::string> Reconfigurator::spawnArguments(const std::string &node) const
{
	// The new process learns its node before its first instruction: through its environment, set by env(1) in
	// front of the program, so MALLEO_NODE and MALLEO_AGENT are there for libmalleo_pmpi's start too and show in
	// /proc/<pid>/environ.
	std::vector<std::string> words;
	const auto found = settings_.nodes.nodes.find(node);
	words.push_back("MALLEO_NODE=" + node);
	if (found != settings_.nodes.nodes.end() && !found->second.agent.empty())
		words.push_back("MALLEO_AGENT=" + found->second.agent);
	// Where the application's commands are: the new process may coordinate one day (reconfigurator.cpp,
	// shareApplication).
	if (const RootAgent &root = commands_.application(); !root.app.empty() && !root.local.empty()) {
		words.push_back("MALLEO_PCM_APP=" + root.app);
		// The new processes' ranks in the application's world follow the processes there now.
		words.push_back("MALLEO_PCM_RANK_BASE=" + std::to_string(worldSize_));
		words.push_back("MALLEO_PCM_ROOT_AGENT=" + root.local);
		if (!root.remote.empty())
			words.push_back("MALLEO_PCM_ROOT_AGENT_REMOTE=" + root.remote);
		if (!root.remoteKey.empty())
			words.push_back("MALLEO_PCM_ROOT_AGENT_KEY=" + root.remoteKey);
	}
	words.push_back(program_);
	words.insert(words.end(), arguments_.begin(), arguments_.end());
	return words;
}

bool Reconfigurator::installSpawn(SpawnOutcome outcome, std::string &why)
{
	if (!outcome.ok) {
		why = outcome.why;
		return false;
	}
	MPI_Comm_free(&control_);
	control_ = outcome.control;
	spansJobs_ = true;
	worldSize_ = static_cast<int>(outcome.places.nodes.size());
	membership_.node = std::move(outcome.places.nodes);
	membership_.state.resize(static_cast<std::size_t>(worldSize_), ProcessState::Spare);
	threads_ = std::move(outcome.places.threads);
	return true;
}

} // namespace malleo::pcm
