// SPDX-License-Identifier: Apache-2.0
// Descriptors as a budget (docs/reliability.md, "Running out of descriptors"): the agent raises its soft
// RLIMIT_NOFILE to the hard limit at start, then shares the figure between what it needs itself (its files,
// ZeroMQ's own descriptors, the local endpoint's processes and CLI clients, its sockets to peers) and the
// connections strangers can open on its listening TCP sockets, which are capped per remote address and in all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace malleo {

// The agent's own descriptors: standard streams, logs, the signalfd, ZeroMQ's context, io thread, socket mailboxes
// and listeners, the monitors, the spare of the accept guard, files read by the profiling module.
constexpr std::size_t kReservedFixed = 64;
// Connections to the local endpoint (MPI processes, the CLI) kept room for at least.
constexpr std::size_t kReservedLocalMin = 256;
// DEALERs to peers at most, whatever the descriptor limit: far above any view, well below ZeroMQ's 1,023 sockets, so
// endpoints named by strangers cannot exhaust them (ZmqTransport::setMaxOutgoingSockets).
constexpr std::size_t kOutgoingMax = 512;
// Connections from one address are capped at no fewer than this (all agents of a host connect from one address).
constexpr std::size_t kPerAddressMin = 64;

struct DescriptorBudget {
	uint64_t limit = 0;	       // RLIMIT_NOFILE, soft
	std::size_t listeners = 0;       // listening TCP sockets sharing the connections
	std::size_t outgoingSockets = 0; // DEALERs to peers at most, two descriptors each (its mailbox, its TCP link)
	std::size_t local = 0;	       // descriptors kept for the local endpoint
	std::size_t perListener = 0;     // connections accepted on each listening TCP socket at most
	std::size_t perAddress = 0;      // of those, from one remote IP address
};

// The share of `limit` descriptors among `listeners` listening TCP sockets (peer inbox, remote application inbox,
// metrics endpoint: 1 to 3) and the rest.
DescriptorBudget descriptorBudget(uint64_t limit, std::size_t listeners);

struct NofileLimit {
	uint64_t before = 0; // the soft limit the agent was started with
	uint64_t after = 0;  // the soft limit now: the hard one, unless raising it failed
	std::string error;   // why it could not be raised; empty when it was (or already was the hard one)
};
// Raises the soft RLIMIT_NOFILE to the hard limit.
NofileLimit raiseNofileLimit();

} // namespace malleo
