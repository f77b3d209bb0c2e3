// SPDX-License-Identifier: Apache-2.0
// Who is in the computation and what a command changes: the active processes in rank order, the spare ones, and
// the plan that turns one active set into the next. Pure, so planning is tested without MPI; the coordinator
// computes a plan and broadcasts it (encode/decode), so every process acts on the same one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/refusal.h"

namespace malleo::pcm {

// What a process of MPI_COMM_WORLD is doing.
enum class ProcessState : std::int64_t {
	Active = 0,  // in the computation
	Spare = 1,   // parked, may be activated: never ran the application's loop, or left a loop it can re-enter
	Left = 2,    // parked after leaving a program that cannot take it back: waits for the end of the run
};

struct Membership {
	std::vector<int> active;                 // world ranks in rank order (slot order)
	std::vector<ProcessState> state;         // per world rank
	std::vector<std::string> node;           // per world rank
	std::vector<std::int64_t> weights;       // per slot: data shares (targetCounts); empty = equal shares
	// Whether a process that leaves becomes spare again or left. The C++ API parks its leavers inside probe(),
	// which owns the buffers and can hand them a new block, so they can be taken back. The PCM C API cannot: a
	// leaver does not return from PCM_Merge / PCM_Reconfigure / PCM_Exit (the papers' semantics, which the
	// skeleton relies on), and its program, having left its loop, has no call that would take it back and reload
	// its buffers; so it waits in state left for the end. One API per program, so the flag is the same on every
	// process; it travels in the encoded plan all the same, so a parked process applies plans as the others do.
	// The same flag tells which merge rule applies (Plan): the C API's keeps the ranks of those that stay.
	bool reusable = false;
};

// The membership an operation leads to. Joiners take the slots of the processes they replace (migration), or in a
// split follow the processes whose blocks they share (each process followed by as many joiners as go evenly); a
// merge keeps the first process of each of as many consecutive groups of slots (plan.cpp), or under the PCM C API,
// whose processes keep their ranks in a merge, the first slots. The processes that stay keep their relative order,
// so block adjacency holds, and with even blocks each keeps the start of its own.
struct Plan {
	Operation op = Operation::None;
	std::int64_t iteration = 0;
	std::int64_t epoch = 0;       // counts the operations tried, so stale protocol messages are told apart
	std::vector<int> before;      // active world ranks before, in rank order
	std::vector<int> after;       // active world ranks after, in rank order
	std::vector<int> joiners;     // world ranks that become active, in the order of their new slots
	std::vector<int> leavers;     // world ranks that leave, in slot order
	std::vector<std::int64_t> weights;  // per slot of `after`; empty = equal shares
};

// "1 process", "3 spare processes": a count of processes for the bridge's messages, `kind` ("spare", "active") or
// nothing before the noun.
std::string processCount(std::size_t count, const char *kind = nullptr);

// The plan of `command` at probe `iteration` on `membership`, or one line saying why it cannot be done (then
// `plan.op` is none), and then in `refusal` (when given) its kind and the most the same operation could do
// (refusal.h).
std::string makePlan(const Command &command, std::int64_t iteration, const Membership &membership, Plan &plan,
		     Refusal *refusal = nullptr);

// Applies a committed plan.
void applyPlan(const Plan &plan, Membership &membership);

// Every world rank that takes part in the plan: before ∪ after, sorted.
std::vector<int> participants(const Plan &plan);

// Plan and membership states on the wire: a fixed-size int64 array of planWords(world) words, so the coordinator
// can broadcast it in one call to processes that do not know yet whether anything happens.
std::size_t planWords(int world);

// The slot of `worldRank` in the plan's `after`, or -1 when it is not there.
int slotAfter(const Plan &plan, int worldRank);
std::vector<std::int64_t> encodePlan(const Plan &plan, const Membership &membership);
void decodePlan(const std::vector<std::int64_t> &words, Plan &plan, Membership &membership);

// The weight of each slot of `after` under a command's node weights: its node's weight (the mean of the named
// ones for a node not named) divided by the processes of `after` on that node.
std::vector<std::int64_t> slotWeights(const std::map<std::string, std::int64_t> &nodeWeights,
				      const Membership &membership, const std::vector<int> &after);

// The element counts of the slots of a layout: proportional to `weights` (one per slot) when given, else balanced.
std::vector<std::int64_t> targetCounts(std::int64_t total, int parts, const std::vector<std::int64_t> &weights);

// Shares of `total` whole elements proportional to `weights`: each slot gets the floor of its quota, the elements
// left go to the largest remainders (the lower slot first on ties), and then, while total >= slots, a slot left
// with nothing takes one element from the largest share (the lowest such slot), so every slot holds data.
std::vector<std::int64_t> weightedCounts(std::int64_t total, const std::vector<std::int64_t> &weights);

// The balanced block sizes of `total` elements over `parts` slots, the remainder on the first slots. They do not
// grow when `parts` grows, so a split always fits in the old buffers (the PCM C API relies on it).
std::vector<std::int64_t> balancedCounts(std::int64_t total, int parts);

} // namespace malleo::pcm
