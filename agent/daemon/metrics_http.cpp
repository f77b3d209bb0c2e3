// SPDX-License-Identifier: Apache-2.0
#include "metrics_http.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "endpoints.h"

namespace malleo {

namespace {

constexpr const char *kContentType = "text/plain; version=0.0.4; charset=utf-8";
// A request's head at most: Prometheus sends a few hundred bytes.
constexpr std::size_t kMaxRequest = 8192;
// Connections accepted per turn of the event loop, so a flood of them cannot starve the rest.
constexpr int kAcceptBatch = 64;

std::string addressOf(const sockaddr_storage &address)
{
	char text[INET6_ADDRSTRLEN] = {};
	if (address.ss_family == AF_INET)
		inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in &>(address).sin_addr, text, sizeof(text));
	else if (address.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 &>(address).sin6_addr, text, sizeof(text));
	return text[0] ? text : "unknown";
}

std::string response(int status, const char *reason, const char *type, const std::string &body, bool head)
{
	return fmt::format("HTTP/1.0 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
			   status, reason, type, body.size(), head ? std::string() : body);
}

} // namespace

MetricsHttp::~MetricsHttp()
{
	stop();
}

std::string MetricsHttp::start(const std::string &hostPort, std::size_t maxConnections, std::size_t perAddress)
{
	HostPort address;
	if (std::string problem = parseHostPort(hostPort, address); !problem.empty())
		return fmt::format("cannot serve metrics on '{}': {}", hostPort, problem);
	addrinfo hints{};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	addrinfo *found = nullptr;
	const std::string port = std::to_string(address.port);
	if (int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); rc != 0)
		return fmt::format("cannot serve metrics on '{}': {}", hostPort, gai_strerror(rc));
	int error = 0;
	for (addrinfo *a = found; a && listenFd_ < 0; a = a->ai_next) {
		const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			error = errno;
			continue;
		}
		// SO_REUSEADDR only: with SO_REUSEPORT a second agent given the same port would bind it too and take half
		// of the scrapes instead of failing.
		const int yes = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
			listenFd_ = fd;
		} else {
			error = errno;
			close(fd);
		}
	}
	freeaddrinfo(found);
	if (listenFd_ < 0)
		return fmt::format("cannot serve metrics on '{}': {}", hostPort,
				   error ? std::strerror(error) : "the address cannot be bound");
	sockaddr_storage bound{};
	socklen_t length = sizeof(bound);
	getsockname(listenFd_, reinterpret_cast<sockaddr *>(&bound), &length);
	const int boundPort = ntohs(bound.ss_family == AF_INET6
					    ? reinterpret_cast<const sockaddr_in6 &>(bound).sin6_port
					    : reinterpret_cast<const sockaddr_in &>(bound).sin_port);
	const std::string host = address.host.find(':') != std::string::npos ? "[" + address.host + "]"
									       : address.host;
	url_ = fmt::format("http://{}:{}/metrics", host, boundPort);
	// Every connection is closed at its deadline: all are younger than it, the oldest goes first.
	caps_.emplace(maxConnections, perAddress, kDeadline);
	return {};
}

void MetricsHttp::addPollItems(std::vector<zmq::pollitem_t> &items) const
{
	if (listenFd_ < 0)
		return;
	items.push_back({nullptr, listenFd_, ZMQ_POLLIN, 0});
	for (const Connection &c : connections_)
		items.push_back({nullptr, c.fd, static_cast<short>(c.response.empty() ? ZMQ_POLLIN : ZMQ_POLLOUT), 0});
}

std::optional<double> MetricsHttp::nextDeadline() const
{
	std::optional<double> next;
	for (const Connection &c : connections_)
		next = std::min(next.value_or(c.deadline), c.deadline);
	return next;
}

void MetricsHttp::serve(const zmq::pollitem_t *items, double now, const std::function<std::string()> &render)
{
	if (listenFd_ < 0)
		return;
	std::optional<std::string> text; // rendered once, for every scrape answered in this turn
	for (std::size_t i = 0; i < connections_.size(); ++i) {
		Connection &c = connections_[i];
		const short revents = items[1 + i].revents;
		if (revents & ZMQ_POLLERR)
			c.done = true;
		else if (c.response.empty() && (revents & ZMQ_POLLIN))
			read(c, render, text);
		else if (!c.response.empty() && (revents & ZMQ_POLLOUT))
			write(c);
		if (now >= c.deadline)
			c.done = true;
	}
	std::erase_if(connections_, [this](const Connection &c) {
		if (!c.done)
			return false;
		caps_->ended(c.fd);
		close(c.fd);
		return true;
	});
	if (items[0].revents & ZMQ_POLLIN)
		accept(now);
}

void MetricsHttp::accept(double now)
{
	for (int i = 0; i < kAcceptBatch; ++i) {
		sockaddr_storage peer{};
		socklen_t length = sizeof(peer);
		const int fd = accept4(listenFd_, reinterpret_cast<sockaddr *>(&peer), &length,
				       SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) // ECONNABORTED: also the accept guard at the limit
				continue;
			return; // EAGAIN: none left
		}
		const std::string from = addressOf(peer);
		connections_.push_back(Connection{fd, now + kDeadline, {}, {}});
		for (int victim : caps_->accepted(fd, from, now)) {
			auto it = std::find_if(connections_.begin(), connections_.end(),
					       [victim](const Connection &c) { return c.fd == victim; });
			lastClosedFrom_ = caps_->addressOf(victim);
			caps_->ended(victim);
			close(victim);
			connections_.erase(it);
			++closedForCap_;
		}
	}
}

void MetricsHttp::read(Connection &c, const std::function<std::string()> &render, std::optional<std::string> &text)
{
	char buffer[2048];
	const ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		c.done = true;
		return;
	}
	c.request.append(buffer, static_cast<std::size_t>(n));
	const std::size_t end = c.request.find("\r\n\r\n");
	if (end == std::string::npos && c.request.find("\n\n") == std::string::npos) {
		if (c.request.size() > kMaxRequest) {
			c.response = response(431, "Request Header Fields Too Large", "text/plain",
					      "request too large\n", false);
			write(c);
		}
		return;
	}
	// The request line: METHOD TARGET VERSION; the rest of the head is not needed.
	const std::string line = c.request.substr(0, c.request.find_first_of("\r\n"));
	const std::size_t space = line.find(' ');
	const std::string method = line.substr(0, space);
	std::string target = space == std::string::npos ? std::string() : line.substr(space + 1);
	target = target.substr(0, target.find(' '));
	target = target.substr(0, target.find('?'));
	const bool head = method == "HEAD";
	if (method != "GET" && !head)
		c.response = response(405, "Method Not Allowed", "text/plain", "only GET\n", false);
	else if (target == "/metrics") {
		if (!text)
			text = render();
		c.response = response(200, "OK", kContentType, *text, head);
	} else if (target == "/")
		c.response = response(200, "OK", "text/plain", "malleod: metrics at /metrics\n", head);
	else
		c.response = response(404, "Not Found", "text/plain", "not found: metrics at /metrics\n", head);
	write(c);
}

void MetricsHttp::write(Connection &c)
{
	while (c.sent < c.response.size()) {
		const ssize_t n = send(c.fd, c.response.data() + c.sent, c.response.size() - c.sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return; // the rest when the socket is writable
		if (n <= 0) {
			c.done = true;
			return;
		}
		c.sent += static_cast<std::size_t>(n);
	}
	c.done = true;
}

uint64_t MetricsHttp::takeClosedForCap(std::string &lastFrom)
{
	lastFrom = lastClosedFrom_;
	return std::exchange(closedForCap_, 0);
}

void MetricsHttp::stop()
{
	for (const Connection &c : connections_)
		close(c.fd);
	connections_.clear();
	if (listenFd_ >= 0)
		close(listenFd_);
	listenFd_ = -1;
}

} // namespace malleo
