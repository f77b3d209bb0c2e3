// SPDX-License-Identifier: Apache-2.0
// The connections of a ROUTER listening on TCP, as its ZeroMQ socket monitor reports them (ZMQ_EVENT_ACCEPTED,
// whose value is the connection's descriptor, and ZMQ_EVENT_DISCONNECTED), held to the caps of ConnectionCaps.
// A connection past a cap is shut down (shutdown(2), never close(2): the descriptor is libzmq's), which libzmq sees
// as the client closing it: it closes the descriptor and reports the disconnection.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <sys/socket.h>
#include <zmq.hpp>

#include "connection_caps.h"

namespace malleo {

class InboxMonitor
{
public:
	// Starts the monitor of inbox on inproc://NAME-monitor. Before inbox binds.
	InboxMonitor(zmq::context_t &context, zmq::socket_t &inbox, const std::string &name);

	// The caps (none until called): connections in all, from one address, and how long a handshake may last.
	void setCaps(std::size_t total, std::size_t perAddress, double handshakeWindow);

	// Readable when events wait; invalid if the monitor could not start.
	zmq::socket_t &socket() { return monitor_; }

	struct Tally {
		uint64_t ended = 0;  // connections that ended (ZMQ_EVENT_DISCONNECTED)
		uint64_t closed = 0; // of those accepted, shut down for a cap
		std::string lastClosedFrom; // the address of the last one shut down
	};
	// Reads every event waiting and shuts down what passes a cap.
	Tally read(double now);

	void stop(zmq::socket_t &inbox);

private:
	struct Peer {
		sockaddr_storage address;
		socklen_t length;
	};
	void shut(int fd, Tally &tally);
	// Whether fd still is the connection getpeername named when it was accepted.
	bool same(int fd, const Peer &peer) const;
	// Forgets connections whose end was never reported, so that they cannot fill a cap over the months.
	void sweep(double now);

	zmq::socket_t monitor_;
	std::optional<ConnectionCaps> caps_;
	std::map<int, Peer> peers_; // what getpeername said when the connection was reported accepted
	double lastSweep_ = 0.0;
};

} // namespace malleo
