// SPDX-License-Identifier: Apache-2.0
// The endpoints of an agent's configuration (listen, advertise, peers, app_listen), checked when
// they are read: ZeroMQ binds "tcp://127.0.0.1:5470x" to port 5470, and "foo" or "node2:5470" as a
// seed fails only at the first send, where nothing says so.
#pragma once

#include <string>
#include <string_view>

namespace malleo {

enum class EndpointUse {
	Bind, // listen, app_listen: the host may be * or an interface, the port * (any free one) or
	      // 0
	Connect, // peers, advertise: a host and a port a peer can reach
};

// Empty when `endpoint` is tcp://HOST:PORT (HOST a name, an IPv4 address or an [IPv6] address) or
// ipc://PATH, usable as `use` says; otherwise what is wrong with it, in words that name it.
std::string endpointProblem(std::string_view endpoint, EndpointUse use);

// An HTTP listener's address (agent.metrics_listen): HOST:PORT, HOST a name, an IPv4 address or an [IPv6]
// address (kept without its brackets), PORT 0 (any free one) to 65535.
struct HostPort {
	std::string host;
	int port = 0;
};

// Empty and `out` filled when `text` is HOST:PORT; otherwise what is wrong with it.
std::string parseHostPort(std::string_view text, HostPort &out);

} // namespace malleo
