// SPDX-License-Identifier: Apache-2.0
#include "connection_caps.h"

namespace malleo {

int ConnectionCaps::victim(const std::string &address, double t, int fresh) const
{
	int oldest = -1;
	double oldestTime = 0.0;
	for (const auto &[fd, c] : connections_) {
		if (c.closing || fd == fresh || (!address.empty() && c.address != address))
			continue;
		if (t - c.accepted >= handshakeWindow_) // past its handshake: kept before the new one
			continue;
		if (oldest < 0 || c.accepted < oldestTime) {
			oldest = fd;
			oldestTime = c.accepted;
		}
	}
	return oldest < 0 ? fresh : oldest;
}

std::vector<int> ConnectionCaps::accepted(int fd, const std::string &address, double t)
{
	// A descriptor number seen again before its end was reported: the old connection is gone.
	ended(fd);
	connections_[fd] = Connection{address, t, false};
	++byAddress_[address];
	++open_;
	std::vector<int> close;
	const auto shut = [&](int victimFd) {
		Connection &c = connections_.at(victimFd);
		c.closing = true;
		if (--byAddress_[c.address] == 0)
			byAddress_.erase(c.address);
		--open_;
		close.push_back(victimFd);
	};
	// The per-address cap first: a flood from one address then costs the connections of others nothing.
	if (byAddress_[address] > perAddress_)
		shut(victim(address, t, fd));
	else if (open_ > total_)
		shut(victim({}, t, fd));
	return close;
}

void ConnectionCaps::ended(int fd)
{
	auto it = connections_.find(fd);
	if (it == connections_.end())
		return;
	if (!it->second.closing) {
		if (--byAddress_[it->second.address] == 0)
			byAddress_.erase(it->second.address);
		--open_;
	}
	connections_.erase(it);
}

std::string ConnectionCaps::addressOf(int fd) const
{
	auto it = connections_.find(fd);
	return it == connections_.end() ? std::string() : it->second.address;
}

} // namespace malleo
