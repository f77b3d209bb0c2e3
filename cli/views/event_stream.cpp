// SPDX-License-Identifier: Apache-2.0
#include "event_stream.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace malleo::cli {

namespace {

// How long a stream may stay silent before we ask the agent whether it lives.
constexpr double kProbeAfter = 3.0;
// Allowance for the time a status reply spends in transit and in queues.
constexpr double kRestartSlack = 1.0;

} // namespace

EventStream::EventStream(std::unique_ptr<AgentClient> client) : client_(std::move(client)) {}

std::unique_ptr<EventStream> EventStream::open(zmq::context_t &context, const std::string &endpoint,
					       double timeout, Failure &failure)
{
	std::unique_ptr<AgentClient> client = AgentClient::create(context, endpoint, timeout, failure);
	if (!client)
		return nullptr;
	std::unique_ptr<EventStream> stream(new EventStream(std::move(client)));
	double now = steadyNow();
	stream->probe(now); // learns the uptime, so that a restart shows
	stream->subscribe(now);
	return stream;
}

void EventStream::subscribe(double now)
{
	state_ = State::Subscribing;
	subscribeId_ = client_->send("events").value_or(0);
	deadline_ = now + client_->timeout();
}

void EventStream::probe(double now)
{
	// A probe that cannot even be queued still counts: its silence is the news.
	probing_ = true;
	probeId_ = client_->send("status").value_or(0);
	if (state_ == State::Following)
		deadline_ = now + client_->timeout();
}

void EventStream::heardStatus(const Message &reply, double now)
{
	auto agent = reply.find("agent");
	if (agent == reply.end() || !agent->is_object())
		return;
	auto uptime = agent->find("uptime");
	if (uptime == agent->end() || !uptime->is_number())
		return;
	double u = uptime->get<double>();
	// The same agent has aged by the time that passed since; a younger one
	// is a new agent that never heard of our subscription.
	if (uptime_ && u + kRestartSlack < *uptime_ + (now - uptimeAt_)) {
		notice_ = fmt::format("the agent at {} restarted; following its new events",
				      client_->endpoint());
		subscribe(now);
	}
	uptime_ = u;
	uptimeAt_ = now;
	agentStart_ = std::chrono::system_clock::now() -
		      std::chrono::duration_cast<std::chrono::system_clock::duration>(
			      std::chrono::duration<double>(u));
}

std::chrono::system_clock::time_point EventStream::when(const Message &event,
							std::chrono::system_clock::time_point arrived) const
{
	auto t = event.find("t");
	if (!agentStart_ || t == event.end() || !t->is_number() || t->get<double>() < 0)
		return arrived;
	auto at = *agentStart_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
					 std::chrono::duration<double>(t->get<double>()));
	return std::min(at, arrived); // an event cannot come from the future
}

std::optional<Failure> EventStream::service(std::vector<Message> &events)
{
	double now = steadyNow();
	std::string problem;
	for (Message &m : client_->drain(&problem)) {
		lastHeard_ = now;
		const std::string &type = m["type"].get_ref<const std::string &>();
		uint64_t re = answers(m);
		if (type == "event") {
			auto event = m.find("event");
			if (event != m.end() && event->is_object())
				events.push_back(std::move(*event));
		} else if (type == "events_ok" && re == subscribeId_) {
			state_ = State::Following;
			if (probing_) // the first probe was sent before the subscription
				deadline_ = now + client_->timeout();
		} else if (type == "status_reply") {
			if (re == probeId_)
				probing_ = false;
			heardStatus(m, now);
		} else if (type == "error" && (re == subscribeId_ || re == 0)) {
			return client_->refusal("events", m);
		}
	}

	if (state_ == State::Subscribing) {
		if (now < deadline_)
			return std::nullopt;
		if (!problem.empty())
			return Failure{kExitFailed, fmt::format("the agent at {} sent an unreadable reply: {}",
								client_->endpoint(), problem)};
		return client_->silence();
	}
	if (probing_ && now >= deadline_)
		return Failure{kExitFailed, fmt::format("the agent at {} stopped answering", client_->endpoint())};
	if (!probing_ && now - lastHeard_ >= kProbeAfter)
		probe(now);
	return std::nullopt;
}

double EventStream::wakeIn() const
{
	double now = steadyNow();
	double at = state_ == State::Subscribing || probing_ ? deadline_ : lastHeard_ + kProbeAfter;
	return std::max(0.0, at - now);
}

std::string EventStream::takeNotice()
{
	return std::exchange(notice_, {});
}

} // namespace malleo::cli
