// SPDX-License-Identifier: Apache-2.0
// Where the coordinator's commands come from: the forced schedule of MALLEO_FORCE, and the application's root agent
// (polled by the coordinator at the probe without waiting; agent_commands.h). Both may be present; a forced command
// comes first.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <malleo/command.h>

#include "agent_commands.h"
#include "plan/refusal.h"

namespace malleo::pcm {

class CommandSource
{
public:
	// Reads MALLEO_FORCE; returns an empty string or one line saying what is wrong (then no command comes). The
	// agent's variables are read by the coordinator when it first asks (agent_commands.h).
	std::string configureFromEnvironment();

	// Whom the agent's commands are asked from (AgentCommands::setApplication); the same on every process, so any
	// of them can coordinate.
	void setApplication(RootAgent root, bool onRootNode) { agent_.setApplication(std::move(root), onRootNode); }
	const RootAgent &application() const { return agent_.application(); }

	// The command for probe `iteration` (op none when there is nothing to do); `active` is the number of active
	// processes, told to the agent. Forced commands depend on the iteration alone, so whichever process is the
	// coordinator after a migration asks the same question and gets the same answer; the agent's come to the
	// process that polls, and the same iteration asked twice gives the same command.
	Command next(std::int64_t iteration, int active);

	// The forced command for probe `iteration`, if any (op none otherwise); asks no agent.
	Command forcedAt(std::int64_t iteration) const;

	// The command taken at probe `from` is carried out at probe `to` (its processes started in the background):
	// its outcome is reported under `to`.
	void deferred(std::int64_t from, std::int64_t to);

	// The outcome of the operation at probe `iteration`, as the coordinator that started it sees it: reported to
	// the agent when its command came from there, nothing otherwise (-1: size or bytes not known). `bytes`: the
	// bytes the processes sent each other to move the data.
	void finished(std::int64_t iteration, bool ok, const std::string &text, std::int64_t before, std::int64_t after,
		      std::int64_t bytes = -1, const Refusal &refusal = {});

	// What the application said of its remaining iterations at probe `probe`, told the agent with each poll.
	void setRemaining(std::int64_t remaining, std::int64_t probe) { agent_.setRemaining(remaining, probe); }

private:
	std::map<std::int64_t, Command> forced_; // by the probe it falls due at
	AgentCommands agent_;
};

} // namespace malleo::pcm
