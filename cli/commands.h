// SPDX-License-Identifier: Apache-2.0
// The subcommands that ask one agent to act: force and drain. Each returns the exit status (failure.h) and has
// printed its own output. The others are declared by their rooms: views/views.h, cluster/cluster_commands.h,
// launcher/run_options.h; subcommands.h puts them in one table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "global_options.h"

namespace malleo::cli {

struct ForceOptions {
	std::string app;
	std::string op;    // split, merge or migrate
	std::string count; // checked by forceCommand, so a bad one gets its own line
	std::optional<std::string> node;
	std::optional<std::string> from;    // merge, migrate: the node whose processes leave
	std::optional<std::string> weights; // W,W,...
	std::optional<double> wait;	    // seconds to wait for the result
	bool json = false;
};
int forceCommand(const GlobalOptions &options, const ForceOptions &force);
struct DrainOptions {
	std::string node;		 // the node to drain (same as --node)
	std::optional<double> deadline; // seconds; default the agent's actions.drain_deadline
	std::optional<double> wait;	 // seconds to follow it until it is done
	bool json = false;
};
int drainCommand(GlobalOptions options, const DrainOptions &drain);

} // namespace malleo::cli
