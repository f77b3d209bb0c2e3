// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/reconfigurator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "reconfiguration/tags.h"

namespace malleo::pcm {

namespace {

enum Reason : std::int64_t { kAgreed = 0, kTimeout = 1, kRefused = 2 };

// Why the coordinator cancelled, the same line on every participant.
std::string cancelled(std::int64_t reason, std::int64_t culprit, double timeout)
{
	char why[256];
	if (reason == kTimeout)
		std::snprintf(why, sizeof why, "world rank %lld did not answer the agreement within %g s",
			      static_cast<long long>(culprit), timeout);
	else
		std::snprintf(why, sizeof why, "world rank %lld answered isUnmalleable", static_cast<long long>(culprit));
	return why;
}

// Whom the coordinator asks: every participant of the plan but itself.
std::vector<int> othersThan(int coordinator, const Plan &plan)
{
	std::vector<int> others = participants(plan);
	others.erase(std::remove(others.begin(), others.end(), coordinator), others.end());
	return others;
}

} // namespace

// Seed 000's protocol: the coordinator asks every participant; each answers isMalleable or isUnmalleable; the
// coordinator commits only when all said yes within the timeout, and otherwise cancels, so no participant moves
// unless all move.
bool Reconfigurator::agree()
{
	const int coordinator = plan_.before.front();
	const std::vector<int> others = othersThan(coordinator, plan_);
	if (worldRank_ != coordinator)
		return participantVote(false);

	const std::size_t words = planWords(worldSize_);
	std::vector<std::int64_t> prepare(words + 1, 0);
	prepare[0] = kPrepare;
	const auto encoded = encodePlan(plan_, membership_);
	std::copy(encoded.begin(), encoded.end(), prepare.begin() + 1);
	const double deadline = MPI_Wtime() + settings_.agreeTimeout;  // a joiner that died holds up its plan until then
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
	if (faultAt(settings_.faults.stallAgree, plan_.iteration))
		stall("the agreement's decision");
	// A participant that died does not take its decision: over TCP (to a spawned process) a blocking send to it
	// would wait forever.
	const std::int64_t decision[3] = {plan_.epoch, reason, culprit};
	std::vector<MPI_Request> sends(others.size());
	for (std::size_t i = 0; i < others.size(); ++i)
		MPI_Isend(decision, 3, MPI_INT64_T, others[i], kTagDecision, control_, &sends[i]);
	for (int w : plan_.joiners)
		wake(w);  // they wait for the decision sleeping
	completeSendsFor(sends, settings_.agreeTimeout);
	if (reason == kAgreed)
		return true;
	fail(cancelled(reason, culprit, settings_.agreeTimeout), true);
	return false;
}

// A participant's side: answer, then wait for the decision. A parked joiner waits sleeping; an active process
// waits in MPI_Recv, which lasts at most the agreement timeout.
bool Reconfigurator::participantVote(bool sleeping)
{
	const int coordinator = plan_.before.front();
	const std::vector<int> others = othersThan(coordinator, plan_);
	const bool designated = !others.empty() && others.back() == worldRank_;
	const bool silent = designated && settings_.faults.agreeTimeout.count(plan_.iteration);
	const bool refuse = designated && settings_.faults.refuse.count(plan_.iteration);
	if (designated && settings_.faults.die.count(plan_.iteration))
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
	fail(cancelled(decision[1], decision[2], settings_.agreeTimeout), false);
	return false;
}

// MALLEO_FAULT=stall-*: a pause at a step of the operation, announced first so that a test knows it is inside it.
void Reconfigurator::stall(const char *before)
{
	std::fprintf(stderr, "malleo-pcm: fault: stalling %.1f s before %s of the %s at iteration %lld\n",
		     settings_.faults.stallSeconds, before, operationName(plan_.op), static_cast<long long>(plan_.iteration));
	std::fflush(stderr);
	std::this_thread::sleep_for(std::chrono::duration<double>(settings_.faults.stallSeconds));
}

void Reconfigurator::fail(const std::string &why, bool print, const Refusal &refusal)
{
	error_ = std::string(operationName(plan_.op)) + " at iteration " + std::to_string(plan_.iteration) +
		 " failed: " + why + "; continuing with " + processCount(membership_.active.size());
	if (print)
		std::fprintf(stderr, "malleo-pcm: %s\n", error_.c_str());
	// Only the coordinator that took an agent's command for this probe sends anything.
	const auto processes = static_cast<std::int64_t>(membership_.active.size());
	commands_.finished(plan_.iteration, false, error_, processes, processes, -1, refusal);
}

void Reconfigurator::failUnplanned(Operation op, std::int64_t iteration, const std::string &why)
{
	plan_ = Plan{};
	plan_.op = op;
	plan_.iteration = iteration;
	fail(why, rank() == 0);
	plan_.op = Operation::None;
}

} // namespace malleo::pcm
