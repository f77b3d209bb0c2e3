// SPDX-License-Identifier: Apache-2.0
#include "command_source.h"

#include <cstdlib>

namespace malleo::pcm {

std::string CommandSource::configureFromEnvironment()
{
	const char *text = std::getenv("MALLEO_FORCE");
	if (!text)
		return {};
	return parseForcedSchedule(text, forced_);
}

Command CommandSource::next(std::int64_t iteration) const
{
	for (const auto &command : forced_)
		if (command.iteration == iteration)
			return command;
	Command none;
	none.iteration = iteration;
	return none;
}

} // namespace malleo::pcm
