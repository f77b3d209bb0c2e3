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

Command CommandSource::forcedAt(std::int64_t iteration) const
{
	const auto forced = forced_.find(iteration);
	return forced != forced_.end() ? forced->second : Command{Operation::None};
}

Command CommandSource::next(std::int64_t iteration, int active)
{
	if (Command forced = forcedAt(iteration); forced.op != Operation::None)
		return forced;
	return agent_.take(iteration, active);
}

void CommandSource::deferred(std::int64_t from, std::int64_t to)
{
	agent_.retake(from, to);
}

void CommandSource::finished(std::int64_t iteration, bool ok, const std::string &text, std::int64_t before,
			     std::int64_t after, std::int64_t bytes, const Refusal &refusal)
{
	agent_.finish(iteration, ok, text, before, after, bytes, refusal);
}

} // namespace malleo::pcm
