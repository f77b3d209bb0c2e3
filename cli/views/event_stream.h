// SPDX-License-Identifier: Apache-2.0
// A subscription to one agent's events that notices when the agent goes quiet
// or restarts: the agent pushes events only while it lives, and a DEALER does
// not tell a silent agent from a dead one, so a quiet stream is probed with a
// status request, and an agent whose uptime went backwards is subscribed again.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include <malleo/message.h>

#include "agent_client.h"
#include "failure.h"

namespace malleo::cli {

class EventStream
{
public:
	// Connects and asks for events; the answer is awaited by service().
	static std::unique_ptr<EventStream> open(zmq::context_t &context, const std::string &endpoint,
						 double timeout, Failure &failure);

	// Reads what has arrived and checks that the agent still answers. Appends
	// the events (the inner "event" objects); returns a failure when the
	// agent did not confirm the subscription or stopped answering.
	std::optional<Failure> service(std::vector<Message> &events);

	// Seconds until service() must run again even if nothing arrives.
	double wakeIn() const;
	zmq::pollitem_t pollItem() { return client_->pollItem(); }
	bool following() const { return state_ == State::Following; }
	const std::string &endpoint() const { return client_->endpoint(); }

	// When the event happened on this machine's clock: the agent's start
	// (learnt from its uptime) plus the event's "t". Falls back to arrived
	// before the agent's uptime is known. Replayed events keep their own time.
	std::chrono::system_clock::time_point when(const Message &event,
						   std::chrono::system_clock::time_point arrived) const;

	// A line to show once (the agent restarted), or empty.
	std::string takeNotice();

private:
	enum class State { Subscribing, Following };

	explicit EventStream(std::unique_ptr<AgentClient> client);
	void subscribe(double now);
	void probe(double now);
	void heardStatus(const Message &reply, double now);

	std::unique_ptr<AgentClient> client_;
	State state_ = State::Subscribing;
	uint64_t subscribeId_ = 0;
	uint64_t probeId_ = 0;
	bool probing_ = false;
	double deadline_ = 0;   // of the subscription or of the probe
	double lastHeard_ = 0;
	std::optional<double> uptime_; // the agent's, at its last status reply
	double uptimeAt_ = 0;
	std::optional<std::chrono::system_clock::time_point> agentStart_;
	std::string notice_;
};

} // namespace malleo::cli
