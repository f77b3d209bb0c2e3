// SPDX-License-Identifier: Apache-2.0
// The agent's Prometheus endpoint: GET /metrics over HTTP, on the address of `agent.metrics_listen`.
//
// A small HTTP/1.0 server run by the daemon's event loop: its listening socket and its connections are descriptors
// the loop polls with its ZeroMQ sockets, so the text (prometheusText, agent/src/metrics.h) is rendered between two
// messages and a scrape sees the state of one moment. Each connection gets one request, read within a deadline,
// one response, and is closed; connections are capped per remote address and in all (ConnectionCaps), the oldest
// closed first. Idle connections thus cost a descriptor each for a few seconds and never keep a scrape waiting,
// which a server that gives each connection a thread of a small pool (cpp-httplib, before) cannot promise.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "connection_caps.h"

namespace malleo {

class MetricsHttp
{
public:
	MetricsHttp() = default;
	~MetricsHttp();
	MetricsHttp(const MetricsHttp &) = delete;
	MetricsHttp &operator=(const MetricsHttp &) = delete;

	// How long a connection may take to send its request and read the answer.
	static constexpr double kDeadline = 5.0;

	// Binds HOST:PORT (port 0: any free one) and listens, with at most `maxConnections` open, `perAddress` of them
	// from one address. Empty, or the line that says why not.
	std::string start(const std::string &hostPort, std::size_t maxConnections, std::size_t perAddress);

	// http://HOST:PORT/metrics with the port bound.
	const std::string &url() const { return url_; }

	// Appends the listening socket and every connection to the event loop's poll items.
	void addPollItems(std::vector<zmq::pollitem_t> &items) const;
	// After the poll, with the items addPollItems appended: accepts, reads, answers (rendering the text at most
	// once), closes what is answered or past its deadline.
	void serve(const zmq::pollitem_t *items, double now, const std::function<std::string()> &render);
	// When the next connection's deadline falls; nullopt without connections.
	std::optional<double> nextDeadline() const;

	// Connections closed for a cap since the last call, and the address of the last one.
	uint64_t takeClosedForCap(std::string &lastFrom);

	void stop();

private:
	struct Connection {
		int fd;
		double deadline;
		std::string request;
		std::string response;
		std::size_t sent = 0;
		bool done = false;
	};
	void accept(double now);
	void read(Connection &c, const std::function<std::string()> &render, std::optional<std::string> &text);
	void write(Connection &c);

	int listenFd_ = -1;
	std::string url_;
	std::optional<ConnectionCaps> caps_;
	std::vector<Connection> connections_;
	uint64_t closedForCap_ = 0;
	std::string lastClosedFrom_;
};

} // namespace malleo
