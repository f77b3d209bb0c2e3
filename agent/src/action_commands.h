// SPDX-License-Identifier: Apache-2.0
// What a decision module's action asks of an application, as a command (<malleo/command.h>): the mapping of
// docs/writing-a-decision-module.md ("What happens to an action"), pure so it is tested alone.
#pragma once

#include <string>
#include <variant>

#include <malleo/application.h>
#include <malleo/command.h>
#include <malleo/decision_module.h>

namespace malleo {

// Why an action becomes no command (a module's own kind, a transfer the split before it carries out, ...).
struct NoCommand {
	std::string why;
};

// The command `action` asks for. `self` is the deciding agent's id, which names its node: the processes an action
// of this node moves or merges are this node's unless the action names another. `app` is what this agent knows
// of the application (for sizes: grow and shrink name the size to reach), nullptr when it hosts none of it.
std::variant<Command, NoCommand> commandForAction(const Action &action, const std::string &self,
							 const ApplicationInfo *app);

} // namespace malleo
