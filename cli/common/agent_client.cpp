// SPDX-License-Identifier: Apache-2.0
#include "agent_client.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <span>

#include <fmt/format.h>
#include <zmq_addon.hpp>

namespace malleo::cli {

namespace {

// Local replies are trusted more than peer traffic but still bounded: a status
// reply with every counter stays far below this.
constexpr std::size_t kMaxReplyBytes = 4 << 20;
// A request queued while no agent is connected waits at most this many behind it.
constexpr int kSendQueue = 64;

std::span<const uint8_t> bytes(const zmq::message_t &frame)
{
	return {static_cast<const uint8_t *>(frame.data()), frame.size()};
}

std::string seconds(double s)
{
	return s == std::floor(s) ? fmt::format("{:.0f}", s) : fmt::format("{:g}", s);
}

} // namespace

double steadyNow()
{
	using namespace std::chrono;
	return duration<double>(steady_clock::now().time_since_epoch()).count();
}

uint64_t answers(const Message &reply)
{
	auto re = reply.find("re");
	return re != reply.end() && re->is_number_unsigned() ? re->get<uint64_t>() : 0;
}

AgentClient::AgentClient(zmq::context_t &context, std::string endpoint, double timeout)
	: endpoint_(std::move(endpoint)), timeout_(timeout),
	  socket_(context, zmq::socket_type::dealer)
{
	socket_.set(zmq::sockopt::linger, 0);
	socket_.set(zmq::sockopt::sndhwm, kSendQueue);
	socket_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(2 * kMaxReplyBytes));
}

std::unique_ptr<AgentClient> AgentClient::create(zmq::context_t &context, const std::string &endpoint,
						 double timeout, Failure &failure)
{
	std::unique_ptr<AgentClient> client(new AgentClient(context, endpoint, timeout));
	try {
		client->socket_.connect(endpoint);
	} catch (const zmq::error_t &e) {
		failure = {kExitBadInput,
			   fmt::format("bad agent endpoint '{}': {} (expected e.g. ipc:///run/malleo/agent.sock "
				       "or tcp://HOST:PORT)",
				       endpoint, e.what())};
		return nullptr;
	}
	return client;
}

std::optional<uint64_t> AgentClient::send(std::string_view type, const nlohmann::json &fields)
{
	uint64_t id = nextId_++;
	Message message = makeMessage(type, "cli", id);
	message.update(fields);
	WireFrames frames = encodeMessage(message, ++sequence_);
	std::array<zmq::const_buffer, 2> parts = {zmq::buffer(frames.header), zmq::buffer(frames.body)};
	try {
		if (!zmq::send_multipart(socket_, parts, zmq::send_flags::dontwait))
			return std::nullopt;
	} catch (const zmq::error_t &) {
		return std::nullopt;
	}
	return id;
}

std::vector<Message> AgentClient::drain(std::string *problem)
{
	std::vector<Message> messages(std::make_move_iterator(early_.begin()),
				      std::make_move_iterator(early_.end()));
	early_.clear();
	for (;;) {
		std::vector<zmq::message_t> frames;
		zmq::recv_result_t n;
		try {
			n = zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait);
		} catch (const zmq::error_t &e) {
			if (e.num() == EINTR)
				continue;
			if (problem)
				*problem = e.what();
			break;
		}
		if (!n)
			break;
		if (frames.size() != 2) {
			if (problem)
				*problem = fmt::format("a reply of {} frames, expected 2", frames.size());
			continue;
		}
		Message m;
		if (auto rejection = decodeMessage(bytes(frames[0]), bytes(frames[1]), kMaxReplyBytes, m)) {
			if (problem)
				*problem = rejection->detail;
			continue;
		}
		if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) {
			if (problem)
				*problem = "a reply without a type";
			continue;
		}
		messages.push_back(std::move(m));
	}
	return messages;
}

std::optional<Message> AgentClient::request(std::string_view type, Failure &failure,
					    const nlohmann::json &fields)
{
	std::optional<uint64_t> id = send(type, fields);
	if (!id) {
		failure = silence();
		return std::nullopt;
	}
	const double deadline = steadyNow() + timeout_;
	std::deque<Message> others;
	std::optional<Message> reply;
	std::string problem;
	for (double left = timeout_; left > 0 && !reply; left = deadline - steadyNow()) {
		zmq::pollitem_t item = pollItem();
		try {
			zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<long>(std::ceil(left * 1000))));
		} catch (const zmq::error_t &e) {
			if (e.num() != EINTR)
				throw;
			break; // interrupted: give up quietly, the caller checks why
		}
		for (Message &m : drain(&problem)) {
			// An error reply without "re" is the agent refusing our envelope.
			bool mine = answers(m) == *id || (m["type"] == "error" && answers(m) == 0);
			if (mine && !reply)
				reply = std::move(m);
			else if (m["type"] == "event")
				others.push_back(std::move(m));
		}
	}
	early_.insert(early_.end(), std::make_move_iterator(others.begin()),
		      std::make_move_iterator(others.end()));
	if (!reply) {
		failure = problem.empty()
				  ? silence()
				  : Failure{kExitFailed, fmt::format("the agent at {} sent an unreadable reply: {}",
								     endpoint_, problem)};
		return std::nullopt;
	}
	if ((*reply)["type"] == "error") {
		failure = refusal(type, *reply);
		return std::nullopt;
	}
	return reply;
}

zmq::pollitem_t AgentClient::pollItem()
{
	return {socket_.handle(), 0, ZMQ_POLLIN, 0};
}

Failure AgentClient::silence() const
{
	return {kExitFailed, fmt::format("no agent answers at {} within {} s (is malleod running? "
					 "use --agent, --node or MALLEO_AGENT)",
					 endpoint_, seconds(timeout_))};
}

Failure AgentClient::refusal(std::string_view type, const Message &error) const
{
	auto text = [&](const char *key) {
		auto it = error.find(key);
		return it != error.end() && it->is_string() ? it->get<std::string>() : std::string("?");
	};
	return {kExitFailed,
		fmt::format("the agent at {} refused '{}': {} ({})", endpoint_, type, text("text"), text("code")),
		true};
}

void AgentClient::watch(zmq::context_t &context)
{
	// One monitor per socket, named after it: a process may watch several agents.
	const std::string address = fmt::format("inproc://malleo-cli-monitor-{}", fmt::ptr(this));
	if (zmq_socket_monitor(socket_.handle(), address.c_str(), ZMQ_EVENT_DISCONNECTED) != 0)
		return;
	monitor_.emplace(context, zmq::socket_type::pair);
	monitor_->connect(address);
}

bool AgentClient::gone()
{
	while (monitor_ && !gone_) {
		std::vector<zmq::message_t> event;
		if (!zmq::recv_multipart(*monitor_, std::back_inserter(event), zmq::recv_flags::dontwait))
			break;
		// The first frame: the event (16 bits) and its value (32 bits); only DISCONNECTED was asked for.
		uint16_t type = 0;
		if (!event.empty() && event[0].size() >= sizeof(type)) {
			std::memcpy(&type, event[0].data(), sizeof(type));
			gone_ = type == ZMQ_EVENT_DISCONNECTED;
		}
	}
	return gone_;
}

} // namespace malleo::cli
