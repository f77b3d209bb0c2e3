// SPDX-License-Identifier: Apache-2.0
// Every tag the bridge uses on its own communicators, in one place so that no two steps can pick the same one. The
// control communicator reaches every process of the run (MPI_COMM_WORLD's, and spawned ones); the union
// communicator, an operation's participants (operation.cpp). The executor uses its own default tag (7300 and 7301,
// executor.h) on the union communicator.
#pragma once

#include <cstdint>

namespace malleo::pcm {

// Messages to a parked process: tag kTagParked on the control communicator, first word the kind.
inline constexpr int kTagParked = 7401;
inline constexpr std::int64_t kPrepare = 1;  // the plan of an operation it takes part in follows
inline constexpr std::int64_t kExit = 2;     // the run ends
inline constexpr std::int64_t kSpawn = 3;    // take part in MPI_Comm_spawn (root, count; then the node's name)
inline constexpr int kNodeNameBytes = 256;

// The agreement (agreement.cpp), on the control communicator.
inline constexpr int kTagDecision = 7402;  // coordinator -> participant: commit or cancel
inline constexpr int kTagVoteBase = 8000;  // + epoch % 8000: a late vote never matches a later agreement

// An operation (operation.cpp).
inline constexpr int kTagUnion = 7403;  // MPI_Comm_create_group of the participants, on the control communicator
inline constexpr int kTagStore = 7404;  // migration source -> replacement, on the union communicator

// Starting processes (start_processes.cpp): the root tells the others and the new processes that they are there
// (one word: 1, or 0 when the spawn failed); then all connect with MPI_Intercomm_create under the second tag.
inline constexpr int kTagSpawned = 7405;
inline constexpr int kTagSpawnConnect = 7406;
inline constexpr int kTagSpawnPrepare = 7407;  // the root to each new process: its SpawnPreparation

} // namespace malleo::pcm
