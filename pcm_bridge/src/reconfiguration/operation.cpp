// SPDX-License-Identifier: Apache-2.0
// An agreed operation, collective over its participants, in its steps: the participants' communicator (activation),
// the manifest that tells the joiners what they receive, the buffers (buffer_moves.h), a migration source's store,
// the outcome every participant agrees on, and the new active communicator (rebuild) or, after a failure, the old
// state intact.
#include "reconfiguration/reconfigurator.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "reconfiguration/buffer_moves.h"
#include "reconfiguration/manifest.h"
#include "reconfiguration/phase_times.h"
#include "reconfiguration/tags.h"
#include "reconfiguration/world_publisher.h"

namespace malleo::pcm {

namespace {

// Collective over the plan's participants, on `control`: their communicator and this process's place in it.
int openParticipants(MPI_Comm control, const Plan &plan, int world_rank, bool joiner, Participants &out)
{
	out.all = participants(plan);
	out.joiner = joiner;
	MPI_Group world_group, union_group;
	MPI_Comm_group(control, &world_group);
	MPI_Group_incl(world_group, static_cast<int>(out.all.size()), out.all.data(), &union_group);
	const int rc = MPI_Comm_create_group(control, union_group, kTagUnion, &out.comm);
	MPI_Group_free(&union_group);
	MPI_Group_free(&world_group);
	if (rc != MPI_SUCCESS)
		return rc;
	MPI_Comm_set_errhandler(out.comm, MPI_ERRORS_RETURN);
	out.root = out.rankOf(plan.before.front());
	MPI_Comm_rank(out.comm, &out.me);
	out.newSlot = slotAfter(plan, world_rank);
	return MPI_SUCCESS;
}

// The manifest, from the coordinator: what the joiners must allocate, and the replicated values. A joiner's `moves`
// become the buffers it names, and its `replicated` the values.
void shareManifest(const Participants &participants, std::vector<BufferMove> &moves, const Store &replicated,
		   Store &joined_replicated, int &error, std::string &why)
{
	std::vector<unsigned char> manifest;
	if (participants.me == participants.root)
		manifest = encodeManifest(moves, replicated);
	std::int64_t manifest_size = static_cast<std::int64_t>(manifest.size());
	MPI_Bcast(&manifest_size, 1, MPI_INT64_T, participants.root, participants.comm);
	manifest.resize(static_cast<std::size_t>(manifest_size));
	MPI_Bcast(manifest.data(), static_cast<int>(manifest_size), MPI_BYTE, participants.root, participants.comm);
	if (!participants.joiner)
		return;
	std::vector<BufferSpec> specs;
	if (!decodeManifest(manifest, specs, joined_replicated)) {
		error = 1;
		why = "malformed manifest";
	}
	moves.assign(specs.size(), {});
	for (std::size_t i = 0; i < specs.size(); ++i)
		moves[i].spec = specs[i];
}

// A migration: each source sends its store to its replacement. Returns the bytes this process sent.
std::int64_t moveStore(const Participants &participants, const Plan &plan, int world_rank, const Store &store,
		       Store &joined_store, int &error, std::string &why)
{
	std::int64_t sent = 0;
	if (plan.op != Operation::Migrate)
		return sent;
	for (std::size_t i = 0; i < plan.leavers.size(); ++i) {
		if (world_rank == plan.leavers[i]) {
			const auto bytes = encodeStore(store);
			std::int64_t size = static_cast<std::int64_t>(bytes.size());
			const int to = participants.rankOf(plan.joiners[i]);
			MPI_Send(&size, 1, MPI_INT64_T, to, kTagStore, participants.comm);
			MPI_Send(bytes.data(), static_cast<int>(size), MPI_BYTE, to, kTagStore, participants.comm);
			sent += size;
		} else if (world_rank == plan.joiners[i]) {
			std::int64_t size = 0;
			const int from = participants.rankOf(plan.leavers[i]);
			MPI_Recv(&size, 1, MPI_INT64_T, from, kTagStore, participants.comm, MPI_STATUS_IGNORE);
			std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
			MPI_Recv(bytes.data(), static_cast<int>(size), MPI_BYTE, from, kTagStore, participants.comm,
				 MPI_STATUS_IGNORE);
			if (!decodeStore(bytes, joined_store)) {
				error = 1;
				why = "malformed migration store";
			}
		}
	}
	return sent;
}

// Whether any participant failed: -1 when none did, else the lowest such rank, whose reason all report.
int firstFailure(const Participants &participants, int error)
{
	struct {
		int failed;
		int rank;
	} local = {error, error ? participants.me : static_cast<int>(participants.all.size())}, global = {0, 0};
	MPI_Allreduce(&local, &global, 1, MPI_2INT, MPI_MAXLOC, participants.comm);
	return global.failed ? global.rank : -1;
}

// The reason `failed` gave, on every participant.
std::string failureReason(const Participants &participants, int failed, const std::string &why)
{
	std::vector<char> text(256, 0);
	if (participants.me == failed)
		std::strncpy(text.data(), why.c_str(), text.size() - 1);
	MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, failed, participants.comm);
	return text.data();
}

} // namespace

bool Reconfigurator::reconfigure(std::vector<BufferMove> &moves, const Store &replicated, const Store &store)
{
	phaseTimes().mark(Phase::Agreement);
	// The active communicator is replaced below: no MPI_COMM_WORLD of the application may point at it meanwhile.
	publishWorld(MPI_COMM_NULL);
	Participants participants;
	if (openParticipants(control_, plan_, worldRank_, joining(), participants) != MPI_SUCCESS) {
		fail("could not build the communicator of the participants", true);
		publishWorld(active_);
		return false;
	}
	phaseTimes().mark(Phase::Activation);

	int error = 0;
	std::string why;
	shareManifest(participants, moves, replicated, joinedReplicated_, error, why);
	BufferMoves buffers(moves, participants, plan_);
	buffers.move(prepared_, error, why);
	prepared_.drop();  // blocks prepared for another plan than this one's are of no use now
	std::int64_t moved = buffers.sent() + moveStore(participants, plan_, worldRank_, store, joinedStore_, error, why);
	const std::vector<int> &all = participants.all;
	if (settings_.faults.redistribute.count(plan_.iteration) && all.back() == worldRank_ &&
	    all.back() != plan_.before.front()) {
		error = 1;
		why = "injected redistribution fault";
	}

	if (faultAt(settings_.faults.stallRedistribute, plan_.iteration) && worldRank_ == plan_.before.front())
		stall("the redistribution's outcome");
	const int failed = firstFailure(participants, error);
	if (failed < 0)
		buffers.keep(moved);
	phaseTimes().mark(Phase::Redistribution);
	if (failed >= 0) {
		const std::string reason = failureReason(participants, failed, why);
		buffers.undo();
		MPI_Comm_free(&participants.comm);
		fail(reason + " (on world rank " + std::to_string(all[static_cast<std::size_t>(failed)]) + ")",
		     worldRank_ == plan_.before.front());
		publishWorld(active_);
		return false;
	}

	MPI_Comm next = MPI_COMM_NULL;
	MPI_Comm_split(participants.comm, participants.newSlot >= 0 ? 0 : MPI_UNDEFINED, participants.newSlot, &next);
	MPI_Comm_free(&participants.comm);
	if (active_ != MPI_COMM_NULL)
		MPI_Comm_free(&active_);
	active_ = next;
	publishWorld(active_);
	applyPlan(plan_, membership_);
	phaseTimes().mark(Phase::Rebuild);
	if (worldRank_ == plan_.before.front())
		phaseTimes().report(operationName(plan_.op), plan_.iteration, plan_.before.size(),
				    plan_.after.size(), settings_.verbose);
	commands_.finished(plan_.iteration, true, "", static_cast<std::int64_t>(plan_.before.size()),
			   static_cast<std::int64_t>(plan_.after.size()), moved);
	if (settings_.verbose && worldRank_ == plan_.after.front()) {
		std::string ranks;
		for (int w : plan_.after)
			ranks += (ranks.empty() ? "" : ",") + std::to_string(w);
		std::fprintf(stderr, "malleo-pcm: %s at iteration %lld: %zu -> %zu processes (world ranks %s)\n",
			     operationName(plan_.op), static_cast<long long>(plan_.iteration), plan_.before.size(),
			     plan_.after.size(), ranks.c_str());
	}
	return true;
}

} // namespace malleo::pcm
