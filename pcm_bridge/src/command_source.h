// SPDX-License-Identifier: Apache-2.0
// Where the coordinator's commands come from. Today: the forced schedule of MALLEO_FORCE. The local agent's
// endpoint (polled by the coordinator at the probe) will be a second source behind the same next() call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "command.h"

namespace malleo::pcm {

class CommandSource
{
public:
	// Reads MALLEO_FORCE; returns an empty string or one line saying what is wrong (then no command comes).
	std::string configureFromEnvironment();

	// The command for probe `iteration` (op none when there is nothing to do). Stateless in the iteration, so
	// whichever process is the coordinator after a migration asks the same question and gets the same answer.
	Command next(std::int64_t iteration) const;

private:
	std::vector<Command> forced_;
};

} // namespace malleo::pcm
