// SPDX-License-Identifier: Apache-2.0
// A connection to one agent's local endpoint: requests with a timeout, and the
// non-blocking pieces needed to watch many agents from one loop.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include <malleo/message.h>

#include "failure.h"

namespace malleo::cli {

// Seconds on a monotonic clock: what every deadline of the CLI is measured in.
double steadyNow();

class AgentClient
{
public:
	// Connects a DEALER to endpoint; a malformed endpoint is bad input.
	static std::unique_ptr<AgentClient> create(zmq::context_t &context, const std::string &endpoint,
						   double timeout, Failure &failure);

	const std::string &endpoint() const { return endpoint_; }
	double timeout() const { return timeout_; }

	// Sends a request (its own fields beside the envelope's) and waits up to
	// the timeout for its answer; an error reply, a garbled reply or silence
	// becomes a failure.
	std::optional<Message> request(std::string_view type, Failure &failure,
				       const nlohmann::json &fields = nlohmann::json::object());

	// Queues a request without waiting; returns its id, nullopt when the
	// socket cannot take it now (no agent connected and the queue is full).
	std::optional<uint64_t> send(std::string_view type,
				     const nlohmann::json &fields = nlohmann::json::object());

	// Every message that has arrived, without waiting. Messages that cannot
	// be decoded are skipped and described in problem.
	std::vector<Message> drain(std::string *problem = nullptr);

	zmq::pollitem_t pollItem();

	// Watches the connection from now on (the agent answered, so it is up): gone() then says whether the agent
	// closed it, which it does only by exiting or being killed; a wait on it can end at once, not at its deadline.
	void watch(zmq::context_t &context);
	bool gone();

	// "no agent answers at X within T s (...)".
	Failure silence() const;
	// An agent's {"type": "error"} reply to a request of the given type.
	Failure refusal(std::string_view type, const Message &error) const;

private:
	AgentClient(zmq::context_t &context, std::string endpoint, double timeout);

	std::string endpoint_;
	double timeout_;
	zmq::socket_t socket_;
	uint64_t nextId_ = 1;
	uint32_t sequence_ = 0;
	std::deque<Message> early_; // arrived while request() waited for something else
	std::optional<zmq::socket_t> monitor_;
	bool gone_ = false;
};

// The id a reply answers ("re"), 0 when it has none.
uint64_t answers(const Message &reply);

} // namespace malleo::cli
