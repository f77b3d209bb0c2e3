// SPDX-License-Identifier: Apache-2.0
// At a probe: the coordinator (active rank 0) takes the next command and plans it, every active process receives the
// plan in one broadcast, and those it names go on to the agreement (agreement.cpp).
#include "reconfiguration/reconfigurator.h"

#include <cstring>
#include <optional>

#include "reconfiguration/phase_times.h"
#include "reconfiguration/tags.h"
#include "reconfiguration/world_publisher.h"

namespace malleo::pcm {

namespace {

constexpr std::int64_t kSpawnFirst = 2;  // first word of a probe's broadcast: spawn, then plan again

} // namespace

// What the coordinator broadcasts at a probe: `words` ([0] 0: a plan follows, 1: a refusal, kSpawnFirst: processes
// to start first; then the plan, or the spawn's count, injected fault and operation), and what only it knows.
struct Reconfigurator::ProbeMessage {
	std::vector<std::int64_t> words;
	std::string refusal;
	Refusal refusalKind; // the coordinator's: only it reports to the agent
	std::string spawnNode;
	Command command;
};

// At the coordinator: the command, and the plan of it or the processes it needs started first.
void Reconfigurator::coordinatorMessage(std::int64_t iteration, const Command &resumed, bool spawned,
					ProbeMessage &m)
{
	std::vector<std::int64_t> &message = m.words;
	// One call answers "what now?": MALLEO_FORCE first, then the local agent (command_source.h).
	m.command = resumed.op != Operation::None ? resumed : commands_.next(iteration, size());
	Plan plan;
	const int spawns = spawned ? 0 : spawnsNeeded(m.command, m.spawnNode, m.refusal);
	if (spawns > 0) {
		message[0] = kSpawnFirst;
		message[1] = spawns;
		message[2] = settings_.faults.spawn.count(iteration) ? 1 : 0;
		message[3] = static_cast<std::int64_t>(m.command.op);
		return;
	}
	if (m.refusal.empty())
		m.refusal = makePlan(m.command, iteration, membership_, plan, &m.refusalKind);
	plan.epoch = epoch_;
	if (!m.refusal.empty()) {
		message[0] = 1;
		plan.op = m.command.op;
		plan.iteration = iteration;
	}
	const auto encoded = encodePlan(plan, membership_);
	std::copy(encoded.begin(), encoded.end(), message.begin() + 1);
}

// A command that needs processes started first, on every active process: they start in the background (the command
// planned at a later probe) or now; nothing when they are there and the command is to be planned again at once.
std::optional<Outcome> Reconfigurator::startFirst(const ProbeMessage &m, std::int64_t iteration)
{
	const std::vector<std::int64_t> &message = m.words;
	std::vector<char> node(kNodeNameBytes, 0);
	if (rank() == 0)
		std::strncpy(node.data(), m.spawnNode.c_str(), node.size() - 1);
	MPI_Bcast(node.data(), kNodeNameBytes, MPI_CHAR, 0, active_);
	const int root = membership_.active.front();
	const int count = static_cast<int>(message[1]);
	if (!message[2] && backgroundSpawnUsable_) {
		spawnInBackground(root, count, node.data(), m.command, iteration);
		return Outcome::None;
	}
	std::string why = "injected spawn fault";
	if (!message[2] && spawnFromProbe(root, count, node.data(), m.command, why))
		return std::nullopt;
	failUnplanned(static_cast<Operation>(message[3]), iteration,
		      "spawning " + std::to_string(count) + " processes on node '" + node.data() + "' failed: " + why);
	return Outcome::Failed;
}

Outcome Reconfigurator::decide()
{
	if (skipProbe_) {
		skipProbe_ = false;
		return Outcome::None;
	}
	// Not the answered probe above: the process's iteration began when it was activated.
	publishProbe();
	phaseTimes().start();
	const std::int64_t iteration = probes_++;
	// A command whose processes are starting in the background is planned once they are there.
	Command resumed;
	bool spawned = false;
	if (background_) {
		switch (backgroundSpawnAtProbe(iteration, resumed)) {
		case SpawnState::Starting:
			return Outcome::None;
		case SpawnState::Failed:
			return Outcome::Failed;
		case SpawnState::Ready:
			spawned = true;
			break;
		}
	}
	// In spawn mode a command may first need processes started; then it is planned again, once, with them.
	for (;; spawned = true) {
		ProbeMessage m;
		m.words.assign(planWords(worldSize_) + 1, 0);
		if (rank() == 0)
			coordinatorMessage(iteration, resumed, spawned, m);
		const std::vector<std::int64_t> &message = m.words;
		MPI_Bcast(m.words.data(), static_cast<int>(m.words.size()), MPI_INT64_T, 0, active_);
		if (message[0] == kSpawnFirst) {
			if (const std::optional<Outcome> outcome = startFirst(m, iteration))
				return *outcome;
			continue;
		}
		// Most probes: nothing asked, nothing to decode.
		if (!message[0] && static_cast<Operation>(message[1]) == Operation::None) {
			plan_.op = Operation::None;
			return Outcome::None;
		}
		Membership received = membership_;
		decodePlan({message.begin() + 1, message.end()}, plan_, received);
		if (message[0]) {
			std::vector<char> text(512, 0);
			if (rank() == 0)
				std::strncpy(text.data(), m.refusal.c_str(), text.size() - 1);
			MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, active_);
			fail(text.data(), rank() == 0, m.refusalKind);
			plan_.op = Operation::None;
			return Outcome::Failed;
		}
		break;
	}
	if (plan_.op == Operation::None)
		return Outcome::None;
	epoch_ = plan_.epoch + 1;
	return agree() ? Outcome::Agreed : Outcome::Failed;
}

} // namespace malleo::pcm
