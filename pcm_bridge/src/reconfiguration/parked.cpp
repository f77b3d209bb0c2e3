// SPDX-License-Identifier: Apache-2.0
// The processes that are not active: a spare or departed process waits parked (parking.h) for an operation that
// activates it, a spawn it takes part in, or the end of the run; the coordinator's messages reach it under
// kTagParked (tags.h).
#include "reconfiguration/reconfigurator.h"

#include <cstdio>

#include "reconfiguration/tags.h"
#include "reconfiguration/world_publisher.h"

namespace malleo::pcm {

Reconfigurator::ParkEnd Reconfigurator::park()
{
	// The coordinator wakes a parked process on its host after each message to it (wake()).
	const WakeUpSignal wake_up;
	publishActive(false);
	const std::size_t words = planWords(worldSize_);
	for (;;) {
		std::vector<std::int64_t> message(words + 1, 0);
		MPI_Request request;
		MPI_Irecv(message.data(), static_cast<int>(message.size()), MPI_INT64_T, MPI_ANY_SOURCE, kTagParked,
			  control_, &request);
		waitSleeping(&request, MPI_STATUS_IGNORE);
		if (message[0] == kExit) {
			ended_ = true;
			return ParkEnd::Exit;
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
			prepared_.drop();  // the operation it was started for will not happen
			continue;
		}
		probes_ = plan_.iteration + 1;
		epoch_ = plan_.epoch + 1;
		std::vector<BufferMove> moves;
		if (!reconfigure(moves, {}, {}))
			continue;
		joinedBuffers_ = std::move(moves);
		skipProbe_ = true;
		startStatus_ = plan_.op == Operation::Migrate ? StartStatus::Migrated : StartStatus::Splitted;
		publishActive(true);
		return ParkEnd::Joined;
	}
}

bool Reconfigurator::parkAfterLeaving()
{
	const std::int64_t left_at = plan_.iteration;
	publishWorld(MPI_COMM_NULL);
	// What a previous activation left here belongs to buffers the program has since replaced.
	for (auto &move : joinedBuffers_)
		if (move.allocated)
			releaseElements(move.newData);  // null once the program has taken it
	joinedBuffers_.clear();
	joinedReplicated_.clear();
	joinedStore_.clear();
	if (park() == ParkEnd::Exit)
		return false;
	// Unlike a spare process returning from start(), this one is inside the very probe that activated it: its
	// program computes that iteration next, and its next probe is a real one.
	skipProbe_ = false;
	if (settings_.verbose)
		std::fprintf(stderr, "malleo-pcm: world rank %d activated again at iteration %lld (%s; it left at "
				     "iteration %lld)\n",
			     worldRank_, static_cast<long long>(plan_.iteration), operationName(plan_.op),
			     static_cast<long long>(left_at));
	return true;
}

void Reconfigurator::waitForEnd()
{
	if (ended_)
		return;
	publishWorld(MPI_COMM_NULL);
	while (park() != ParkEnd::Exit) {
		// Only processes in state left call this (the C API's leavers, a C++ process that ended parked returns
		// above): no plan names them, so nothing but the end arrives here.
	}
}

std::vector<int> Reconfigurator::parked() const
{
	std::vector<int> ranks;
	for (int w = 0; w < worldSize_; ++w)
		if (membership_.state[static_cast<std::size_t>(w)] != ProcessState::Active)
			ranks.push_back(w);
	return ranks;
}

// Open MPI completes a blocking send of more than 256 bytes (the shared-memory transport's inline limit) only once
// the receiver has taken it: a parked receiver takes it at its next test, up to 16 ms later, measured at 12-16 ms
// per message. So the sends start, the receivers are woken, and then the sends complete.
std::vector<int> Reconfigurator::sendToParked(const std::vector<int> &ranks, const std::vector<std::int64_t> &message,
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
	for (std::size_t i : completeSendsFor(requests, settings_.agreeTimeout))
		if (missing.empty() || missing.back() != ranks[i / 2])
			missing.push_back(ranks[i / 2]);
	return missing;
}

void Reconfigurator::wake(int world_rank) const
{
	if (world_rank >= 0 && static_cast<std::size_t>(world_rank) < threads_.size())
		wakeParked(threads_[static_cast<std::size_t>(world_rank)]);
}

} // namespace malleo::pcm
