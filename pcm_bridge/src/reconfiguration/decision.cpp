// SPDX-License-Identifier: Apache-2.0
// At a probe: the coordinator (active rank 0) takes the next command and plans it, every active process receives the
// plan in one broadcast, and those it names go on to the agreement (agreement.cpp).
#include "reconfiguration/reconfigurator.h"

#include <cstring>

#include "reconfiguration/phase_times.h"
#include "reconfiguration/tags.h"
#include "reconfiguration/world_publisher.h"

namespace malleo::pcm {

namespace {

constexpr std::int64_t kSpawnFirst = 2;  // first word of a probe's broadcast: spawn, then plan again

} // namespace

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
		const std::size_t words = planWords(worldSize_);
		std::vector<std::int64_t> message(words + 1, 0);
		std::string refusal;
		Refusal refusalKind; // the coordinator's: only it reports to the agent
		std::string spawn_node;
		Command command;
		if (rank() == 0) {
			// One call answers "what now?": MALLEO_FORCE first, then the local agent (command_source.h).
			command = resumed.op != Operation::None ? resumed : commands_.next(iteration, size());
			Plan plan;
			const int spawns = spawned ? 0 : spawnsNeeded(command, spawn_node, refusal);
			if (spawns > 0) {
				message[0] = kSpawnFirst;
				message[1] = spawns;
				message[2] = settings_.faults.spawn.count(iteration) ? 1 : 0;
				message[3] = static_cast<std::int64_t>(command.op);
			} else {
				if (refusal.empty())
					refusal = makePlan(command, iteration, membership_, plan, &refusalKind);
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
			if (!message[2] && backgroundSpawnUsable_) {
				spawnInBackground(root, count, node.data(), command, iteration);
				return Outcome::None;
			}
			std::string why = "injected spawn fault";
			if (!message[2] && spawnFromProbe(root, count, node.data(), command, why))
				continue;
			failUnplanned(static_cast<Operation>(message[3]), iteration,
				      "spawning " + std::to_string(count) + " processes on node '" + node.data() +
					      "' failed: " + why);
			return Outcome::Failed;
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
				std::strncpy(text.data(), refusal.c_str(), text.size() - 1);
			MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, active_);
			fail(text.data(), rank() == 0, refusalKind);
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
