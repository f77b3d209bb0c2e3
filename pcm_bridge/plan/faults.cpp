// SPDX-License-Identifier: Apache-2.0
#include "plan/faults.h"

#include <cstdlib>

namespace malleo::pcm {

std::string parseFaults(const std::string &text, Faults &out)
{
	Faults faults;
	std::size_t start = 0;
	while (start < text.size()) {
		auto end = text.find(',', start);
		if (end == std::string::npos)
			end = text.size();
		const std::string entry = text.substr(start, end - start);
		const auto at = entry.find('@');
		const std::string kind = entry.substr(0, at);
		const std::string iteration = at == std::string::npos ? std::string() : entry.substr(at + 1);
		const bool any = iteration == "*" && kind.starts_with("stall-");
		if (!any && (iteration.empty() || iteration.find_first_not_of("0123456789") != std::string::npos ||
			     iteration.size() > 12))
			return "MALLEO_FAULT: '" + entry + "' is not kind@iteration (stall-*: also kind@*)";
		const std::int64_t i = any ? kAnyIteration : std::strtoll(iteration.c_str(), nullptr, 10);
		if (kind == "agree-timeout")
			faults.agreeTimeout.insert(i);
		else if (kind == "die")
			faults.die.insert(i);
		else if (kind == "refuse")
			faults.refuse.insert(i);
		else if (kind == "redistribute")
			faults.redistribute.insert(i);
		else if (kind == "spawn")
			faults.spawn.insert(i);
		else if (kind == "stall-agree")
			faults.stallAgree.insert(i);
		else if (kind == "stall-redistribute")
			faults.stallRedistribute.insert(i);
		else
			return "MALLEO_FAULT: unknown kind '" + kind +
			       "' (agree-timeout, die, refuse, redistribute, spawn, stall-agree or stall-redistribute)";
		start = end + 1;
	}
	faults.stallSeconds = out.stallSeconds;
	out = faults;
	return {};
}

} // namespace malleo::pcm
