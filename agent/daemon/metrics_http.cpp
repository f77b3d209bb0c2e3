// SPDX-License-Identifier: Apache-2.0
#include "metrics_http.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <httplib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "endpoints.h"

namespace malleo {

namespace {

// How long a scrape waits for the event loop; it answers within a tick unless a handler is stuck.
constexpr auto kAnswerTimeout = std::chrono::seconds(5);
constexpr const char *kContentType = "text/plain; version=0.0.4; charset=utf-8";

} // namespace

MetricsHttp::MetricsHttp() = default;

MetricsHttp::~MetricsHttp()
{
	stop();
}

std::string MetricsHttp::start(const std::string &hostPort)
{
	HostPort address;
	if (std::string problem = parseHostPort(hostPort, address); !problem.empty())
		return fmt::format("cannot serve metrics on '{}': {}", hostPort, problem);
	wakeFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wakeFd_ < 0)
		return fmt::format("cannot serve metrics: eventfd: {}", std::strerror(errno));

	server_ = std::make_unique<httplib::Server>();
	// SO_REUSEADDR only: cpp-httplib's default also sets SO_REUSEPORT, with which a second agent given the same
	// port would bind it too and take half of the scrapes instead of failing.
	server_->set_socket_options([](int sock) {
		int yes = 1;
		setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
	});
	// Scrapes are few and each is answered by the event loop: two threads are plenty.
	server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
	server_->set_read_timeout(5);
	server_->set_write_timeout(5);
	server_->Get("/metrics", [this](const httplib::Request &, httplib::Response &res) {
		std::unique_lock lock(mutex_);
		const uint64_t ticket = ++asked_;
		const uint64_t one = 1;
		if (write(wakeFd_, &one, sizeof(one)) < 0) {
			// Only a counter at its maximum refuses: the loop is woken already.
		}
		if (!answered_.wait_for(lock, kAnswerTimeout,
					[&] { return stopping_ || answeredUpTo_ >= ticket; }) ||
		    stopping_) {
			res.status = 503;
			res.set_content("the agent did not answer in time\n", "text/plain");
			return;
		}
		res.set_content(text_, kContentType);
	});
	server_->Get("/", [](const httplib::Request &, httplib::Response &res) {
		res.set_content("malleod: metrics at /metrics\n", "text/plain");
	});

	errno = 0;
	int port = address.port;
	const bool bound = port == 0 ? (port = server_->bind_to_any_port(address.host)) > 0
				     : server_->bind_to_port(address.host, port);
	if (!bound) {
		const int error = errno;
		server_.reset();
		return fmt::format("cannot serve metrics on '{}': {}", hostPort,
				   error ? std::strerror(error) : "the address cannot be bound");
	}
	const std::string host = address.host.find(':') != std::string::npos ? "[" + address.host + "]"
									       : address.host;
	url_ = fmt::format("http://{}:{}/metrics", host, port);
	thread_ = std::thread([this] { server_->listen_after_bind(); });
	return {};
}

void MetricsHttp::answer(const std::function<std::string()> &render)
{
	uint64_t count = 0;
	if (read(wakeFd_, &count, sizeof(count)) < 0 && errno == EAGAIN)
		return;
	uint64_t upTo = 0;
	{
		std::lock_guard lock(mutex_);
		upTo = asked_;
	}
	// Rendered outside the lock: a scrape that asks meanwhile writes the eventfd again and gets the next text.
	std::string text = render();
	{
		std::lock_guard lock(mutex_);
		text_ = std::move(text);
		answeredUpTo_ = upTo;
	}
	answered_.notify_all();
}

void MetricsHttp::stop()
{
	{
		std::lock_guard lock(mutex_);
		stopping_ = true;
	}
	answered_.notify_all();
	if (server_)
		server_->stop();
	if (thread_.joinable())
		thread_.join();
	server_.reset();
	if (wakeFd_ >= 0)
		close(wakeFd_);
	wakeFd_ = -1;
}

} // namespace malleo
