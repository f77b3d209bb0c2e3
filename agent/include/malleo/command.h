// SPDX-License-Identifier: Apache-2.0
// A reconfiguration command, one type wherever it is: the agent queues it (`force`, `reconf_request`) and hands it
// out (`command`), the PCM bridge and the simulator carry it out, `malleo run` reads MALLEO_FORCE's schedule of them.
// Its fields as a message has them, and the rules they must follow (checkCommand, <malleo/message.h>), are here once:
// nobody maps a command's JSON by hand. Library malleo_wire (agent/wire/command.cpp, forced_schedule.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <malleo/message.h>

namespace malleo {

// The text of a result as the bridge (and the simulator's) sends it: cut a little below what the agent takes.
constexpr std::size_t kResultTextCut = 500;
static_assert(kResultTextCut <= kResultTextMax);

// The numbers travel in the bridge's broadcast plan: do not renumber.
enum class Operation : int {
	None = 0,
	Split = 1,   // activate or add `count` processes
	Merge = 2,   // remove `count` processes
	Migrate = 3, // move `count` processes to `node`
};

// "split", "merge", "migrate", "none".
const char *operationName(Operation op);
// The operation named `name` (split, merge or migrate; not none), or false.
bool operationFromName(std::string_view name, Operation &op);

// Every member has a default, so that {op, count} is a whole command (-Wmissing-field-initializers).
struct Command {
	Operation op = Operation::None;
	std::int64_t count = 1;
	std::string node = {}; // split, migrate: where the processes go; empty: the bridge chooses (a node but `from`)
	// merge, migrate: the node whose processes leave (message field `from_node`); empty: the bridge chooses
	std::string from = {};
	// Data per process after the operation, in slot order (one weight per process of the new configuration):
	// shares of block1d and independent buffers are proportional to them. Empty: equal shares (after a migration:
	// the shares stay as they were).
	std::vector<std::int64_t> weights = {};
	// Data per node (issue 27): when `weights` is empty, each process of the new configuration gets its node's
	// weight divided by the processes the plan leaves on that node; a node not named gets the mean weight.
	std::map<std::string, std::int64_t> nodeWeights = {};
};

// The message fields of a command: {op, count, node?, from_node?, weights?, node_weights?}, what checkCommand reads.
Message commandFields(const Command &command);

// The command in a message's fields, if they pass checkCommand; else one line saying what is wrong (`out` unchanged).
std::optional<std::string> readCommand(const Message &fields, Command &out);

// A `command` reply to a poll (docs/protocol.md): true with the command and its id when it names one that passes
// checkCommand; false when it names none (op none, `problem` empty) or cannot be carried out (`problem` says why).
bool commandFromReply(const Message &reply, Command &command, std::uint64_t &id, std::string &problem);

// "split 1 -> n3", "migrate 2 n2 -> any", "merge 1 on n1": a command in a few words, for events and the timeline.
std::string describeCommand(const Command &command);

// MALLEO_FORCE: comma-separated operation@iteration[:argument] entries, as docs/pcm-api.md specifies
// ("split@10:2/n2/w=1,1,3,merge@20,migrate@30:1/node1"); a comma followed by a digit continues a weight list.
// Returns an empty string and fills `out` (by iteration, one command per probe), or one line saying what is wrong.
std::string parseForcedSchedule(const std::string &text, std::map<std::int64_t, Command> &out);

} // namespace malleo
