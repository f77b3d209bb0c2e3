// SPDX-License-Identifier: Apache-2.0
// The connections accepted on one listening TCP socket, counted by remote address and in all, and which of them to
// close when a new one passes a cap. Pure: the caller reports accepted and ended connections (fd, address, time) and
// shuts down the descriptors it is told to; no socket is touched here.
//
// Which connection goes: one still in its handshake before one that finished it, the oldest such first (it is the
// nearest to the handshake timeout anyway); when every other connection is past its handshake, the new one. A
// connection older than the handshake window has finished it: ZeroMQ closes any that has not
// (ZMQ_HANDSHAKE_IVL), and the metrics endpoint closes every connection at its deadline.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace malleo {

class ConnectionCaps
{
public:
	ConnectionCaps(std::size_t total, std::size_t perAddress, double handshakeWindow)
		: total_(total), perAddress_(perAddress), handshakeWindow_(handshakeWindow)
	{
	}

	// A connection accepted on fd from address (its IP, no port) at time t. Returns the descriptors to close:
	// none, or one (the new one or an older one) when a cap is passed.
	std::vector<int> accepted(int fd, const std::string &address, double t);
	// The connection on fd ended (or was closed): it no longer counts.
	void ended(int fd);

	// The address a tracked connection came from; empty if fd is not one.
	std::string addressOf(int fd) const;
	std::size_t size() const { return connections_.size(); }
	std::size_t total() const { return total_; }
	std::size_t perAddress() const { return perAddress_; }

private:
	struct Connection {
		std::string address;
		double accepted;
		bool closing; // told to the caller to close; it counts until it has ended
	};
	// The connection to close among those of address (all if empty) that are not closing yet, or -1.
	int victim(const std::string &address, double t, int fresh) const;

	std::size_t total_;
	std::size_t perAddress_;
	double handshakeWindow_;
	std::map<int, Connection> connections_;
	std::map<std::string, std::size_t> byAddress_; // connections not closing, per address
	std::size_t open_ = 0;			       // connections not closing
};

} // namespace malleo
