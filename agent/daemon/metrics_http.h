// SPDX-License-Identifier: Apache-2.0
// The agent's Prometheus endpoint: GET /metrics over HTTP (cpp-httplib), on the address of `agent.metrics_listen`.
//
// The core belongs to the daemon's event loop, so the HTTP thread never reads it: a scrape wakes the loop through
// an eventfd it polls with its sockets, the loop renders the text (prometheusText, agent/src/metrics.h) between
// two messages and hands it back. A scrape thus sees the state of one moment, and costs nothing when nobody asks.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace malleo {

class MetricsHttp
{
public:
	MetricsHttp();
	~MetricsHttp();
	MetricsHttp(const MetricsHttp &) = delete;
	MetricsHttp &operator=(const MetricsHttp &) = delete;

	// Binds HOST:PORT (port 0: any free one) and serves in the background. Empty, or the line that says why not.
	std::string start(const std::string &hostPort);

	// http://HOST:PORT/metrics with the port bound.
	const std::string &url() const { return url_; }

	// Readable while a scrape waits for the event loop's answer.
	int wakeFd() const { return wakeFd_; }

	// Called by the event loop when wakeFd() is readable: renders the text once for every scrape waiting.
	void answer(const std::function<std::string()> &render);

	void stop();

private:
	std::unique_ptr<httplib::Server> server_;
	std::thread thread_;
	int wakeFd_ = -1;
	std::string url_;

	std::mutex mutex_;
	std::condition_variable answered_;
	uint64_t asked_ = 0;	  // scrapes that have asked the loop
	uint64_t answeredUpTo_ = 0; // the scrapes the last text answers
	std::string text_;
	bool stopping_ = false;
};

} // namespace malleo
