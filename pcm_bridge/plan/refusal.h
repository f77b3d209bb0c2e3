// SPDX-License-Identifier: Apache-2.0
// Why a command could not be done: what the plan adds to the wire's command (<malleo/command.h>: its fields, its
// rules, MALLEO_FORCE's grammar), filled by makePlan (plan.h) and sent with the result to the agent.
#pragma once

#include <cstdint>
#include <string>

#include <malleo/command.h>

namespace malleo::pcm {

// Why a command could not be done, for the agent's decision module (docs/protocol.md, `result`'s `refusal`): a
// machine-readable kind beside the one line for people. `most` is the largest count of the same operation that
// could have been done instead, where the kind says one: pool_exhausted (a split or migration found too few spare
// processes: the spares there), merge_ranks (the PCM C API lets only the last slots leave: how many of that node's
// may), too_few_active (a merge or migration names more processes than there are: how many there are). Every other
// refusal or failure is `other`, with no `most`.
struct Refusal {
	std::string kind = "other";
	std::int64_t most = -1; // -1: none
};

} // namespace malleo::pcm
