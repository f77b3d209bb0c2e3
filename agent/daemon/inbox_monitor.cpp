// SPDX-License-Identifier: Apache-2.0
#include "inbox_monitor.h"

#include <cstring>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <zmq_addon.hpp>

namespace malleo {

namespace {

// The IP address of a peer, without its port; an IPv4 address mapped into IPv6 as the IPv4 one.
std::string ipOf(const sockaddr_storage &address)
{
	char text[INET6_ADDRSTRLEN] = {};
	if (address.ss_family == AF_INET) {
		const auto &in = reinterpret_cast<const sockaddr_in &>(address);
		inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
	} else if (address.ss_family == AF_INET6) {
		const auto &in6 = reinterpret_cast<const sockaddr_in6 &>(address);
		if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
			inet_ntop(AF_INET, &in6.sin6_addr.s6_addr[12], text, sizeof(text));
		else
			inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
	}
	return text[0] ? text : "unknown";
}

// How often the connections whose end was not reported are looked for.
constexpr double kSweepInterval = 10.0;

} // namespace

InboxMonitor::InboxMonitor(zmq::context_t &context, zmq::socket_t &inbox, const std::string &name)
{
	const std::string endpoint = "inproc://" + name + "-monitor";
	if (zmq_socket_monitor(inbox.handle(), endpoint.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0)
		return;
	monitor_ = zmq::socket_t(context, zmq::socket_type::pair);
	monitor_.set(zmq::sockopt::linger, 0);
	monitor_.connect(endpoint);
}

void InboxMonitor::setCaps(std::size_t total, std::size_t perAddress, double handshakeWindow)
{
	caps_.emplace(total, perAddress, handshakeWindow);
}

InboxMonitor::Tally InboxMonitor::read(double now)
{
	Tally tally;
	if (!monitor_)
		return tally;
	std::vector<zmq::message_t> event; // the event number (16 bits) and its value (32 bits), then the endpoint
	while (zmq::recv_multipart(monitor_, std::back_inserter(event), zmq::recv_flags::dontwait)) {
		uint16_t number = 0;
		uint32_t value = 0;
		if (!event.empty() && event[0].size() >= 6) {
			std::memcpy(&number, event[0].data(), sizeof(number));
			std::memcpy(&value, static_cast<const char *>(event[0].data()) + 2, sizeof(value));
		}
		event.clear();
		const int fd = static_cast<int>(value);
		if (number == ZMQ_EVENT_DISCONNECTED) {
			++tally.ended;
			peers_.erase(fd);
			if (caps_)
				caps_->ended(fd);
		} else if (number == ZMQ_EVENT_ACCEPTED && caps_) {
			Peer peer{};
			peer.length = sizeof(peer.address);
			if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer.address), &peer.length) != 0)
				peer.length = 0; // reset by the client already: counted under "unknown" until it ends
			else if (peer.address.ss_family != AF_INET && peer.address.ss_family != AF_INET6)
				continue; // an inbox on ipc://: local users, whom the directory's mode lets in
			peers_[fd] = peer;
			for (int victim : caps_->accepted(fd, ipOf(peer.address), now))
				shut(victim, tally);
		}
	}
	if (caps_)
		sweep(now);
	return tally;
}

bool InboxMonitor::same(int fd, const Peer &peer) const
{
	sockaddr_storage now{};
	socklen_t length = sizeof(now);
	return peer.length != 0 && getpeername(fd, reinterpret_cast<sockaddr *>(&now), &length) == 0 &&
	       length == peer.length && std::memcmp(&now, &peer.address, length) == 0;
}

// The descriptor is shut down only if it still is the connection reported: if libzmq closed it meanwhile (its
// disconnection not read yet) and the number went to another connection, that one's peer differs.
void InboxMonitor::shut(int fd, Tally &tally)
{
	const auto it = peers_.find(fd);
	if (it == peers_.end() || !same(fd, it->second))
		return;
	shutdown(fd, SHUT_RDWR);
	++tally.closed;
	tally.lastClosedFrom = ipOf(it->second.address);
}

void InboxMonitor::sweep(double now)
{
	if (now - lastSweep_ < kSweepInterval)
		return;
	lastSweep_ = now;
	for (auto it = peers_.begin(); it != peers_.end();) {
		if (same(it->first, it->second)) {
			++it;
			continue;
		}
		caps_->ended(it->first);
		it = peers_.erase(it);
	}
}

void InboxMonitor::stop(zmq::socket_t &inbox)
{
	if (!monitor_)
		return;
	zmq_socket_monitor(inbox.handle(), nullptr, 0);
	monitor_.close();
}

} // namespace malleo
