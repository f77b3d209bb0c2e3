// SPDX-License-Identifier: Apache-2.0
// What a decision module's action asks of an application, as the bridge's command: the mapping of
// docs/writing-a-decision-module.md ("What happens to an action"), pure so it is tested alone.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <malleo/application.h>
#include <malleo/decision_module.h>

namespace malleo {

// A reconfiguration as the root agent queues it and the bridge carries it out (checkCommand's fields).
struct CommandRequest {
	std::string op;	  // split, merge or migrate
	int64_t count = 1;
	std::string node; // split, migrate: where the processes go; empty: the bridge chooses
	std::string from; // merge, migrate: the node whose processes leave; empty: the bridge chooses
	std::vector<int64_t> weights;
	// Data per node, for the bridge to share among the processes on each node (issue 27): the processes of a
	// node get its weight between them. Unnamed nodes get the mean weight. Empty: `weights`, else even shares.
	std::map<std::string, int64_t> nodeWeights = {};
};

// Why an action becomes no command (a module's own kind, a transfer the split before it carries out, ...).
struct NoCommand {
	std::string why;
};

// The command `action` asks for. `self` is the deciding agent's id, which names its node: the processes an action
// of this node moves or merges are this node's unless the action names another. `app` is what this agent knows
// of the application (for sizes: grow and shrink name the size to reach), nullptr when it hosts none of it.
std::variant<CommandRequest, NoCommand> commandForAction(const Action &action, const std::string &self,
							 const ApplicationInfo *app);

// The message fields of a command request ({op, count, node?, from?, weights?}), as checkCommand reads them.
nlohmann::json commandFields(const CommandRequest &command);

// The command in a message's fields (already checked by checkCommand).
CommandRequest commandFromFields(const nlohmann::json &fields);

// "split 1 -> n3", "migrate 2 n2 -> any", "merge 1 on n1": a command in a few words, for events and the timeline.
std::string describeCommand(const CommandRequest &command);

} // namespace malleo
