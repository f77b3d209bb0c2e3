// SPDX-License-Identifier: Apache-2.0
#include "descriptor_budget.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/resource.h>

namespace malleo {

DescriptorBudget descriptorBudget(uint64_t limit, std::size_t listeners)
{
	DescriptorBudget b;
	b.limit = limit;
	b.listeners = std::max<std::size_t>(listeners, 1);
	const std::size_t available = limit > kReservedFixed ? static_cast<std::size_t>(std::min<uint64_t>(
									     limit - kReservedFixed, SIZE_MAX / 2))
							     : 0;
	b.outgoingSockets = std::min(kOutgoingMax, available / 8);
	const std::size_t rest = available - 2 * b.outgoingSockets;
	b.local = std::min(std::max(kReservedLocalMin, rest / 4), rest / 2);
	// Half of what is left stays free: a connection past a cap holds its descriptor until ZeroMQ has seen it shut
	// down, and a burst is accepted by ZeroMQ's io thread faster than the event loop reads the monitor.
	b.perListener = (rest - b.local) / 2 / b.listeners;
	b.perAddress = std::max(b.perListener / 8, std::min(b.perListener, kPerAddressMin));
	return b;
}

NofileLimit raiseNofileLimit()
{
	NofileLimit result;
	rlimit limit{};
	if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
		result.error = std::strerror(errno);
		return result;
	}
	result.before = result.after = limit.rlim_cur;
	if (limit.rlim_cur == limit.rlim_max)
		return result;
	limit.rlim_cur = limit.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
		result.error = std::strerror(errno);
		return result;
	}
	result.after = limit.rlim_cur;
	return result;
}

} // namespace malleo
