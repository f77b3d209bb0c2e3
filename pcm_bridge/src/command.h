// SPDX-License-Identifier: Apache-2.0
// A reconfiguration command, and the forced schedule (MALLEO_FORCE) that produces commands for tests and
// experiments before the agents are wired in. Pure: no MPI, so the grammar is tested on its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace malleo::pcm {

enum class Operation : int {
	None = 0,
	Split = 1,    // activate or add `count` processes
	Merge = 2,    // remove `count` processes
	Migrate = 3,  // move `count` processes to `node`
};

const char *operationName(Operation op);
// The operation named `name` (split, merge or migrate; not none), or false.
bool operationFromName(const std::string &name, Operation &op);

struct Command {
	Operation op = Operation::None;
	std::int64_t iteration = 0;  // the probe (0-based) at which it applies
	int count = 1;
	std::string node;  // split, migrate: the target node; empty = any node with a spare process (but `from`)
	// Data per process after the operation, in slot order (one weight per process of the new configuration):
	// shares of block1d and independent buffers are proportional to them. Empty: equal shares (after a
	// migration: the shares stay as they were).
	std::vector<std::int64_t> weights;
	// merge, migrate: the node whose processes leave (an agent's command names it); empty = the bridge chooses
	std::string from;
	// Data per node (an agent's command, issue 27): when `weights` is empty, each process of the new configuration
	// gets its node's weight divided by the processes the plan leaves on that node; a node not named gets the
	// mean weight of those named.
	std::map<std::string, std::int64_t> nodeWeights = {};
};

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

// Parses comma-separated operation@iteration[:argument] entries, as docs/pcm-api.md specifies
// ("split@10:2/n2/w=1,1,3,merge@20,migrate@30:1/node1"). A comma followed by a digit continues a weight list.
// Returns an empty string and fills `out` (sorted by iteration), or one line saying what is wrong.
std::string parseForcedSchedule(const std::string &text, std::vector<Command> &out);

} // namespace malleo::pcm
