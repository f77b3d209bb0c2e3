// SPDX-License-Identifier: Apache-2.0
#include "agent_commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.h>

// MALLEO_App_id and MALLEO_Agent_endpoint, declared weak there: the bridge runs with or without the profiler.
#include "malleo_pmpi.h"

namespace malleo::pcm {

namespace {

// The agent's wire format (agent/include/malleo/message.h): an 8-byte header frame, then a MessagePack body.
constexpr std::uint8_t kWireMagic = 0x6d;
constexpr std::uint8_t kWireVersion = 1;
constexpr std::uint8_t kWireFlagJson = 0x01;
constexpr std::size_t kWireHeaderSize = 8;
constexpr int kMaxReplyBytes = 65536;
constexpr const char *kClientName = "malleo-pcm";
// The agent refuses longer texts (its schema's limit is 512 characters).
constexpr std::size_t kMaxText = 500;
// Polls queued while the agent is away: one is enough to be answered when it comes.
constexpr int kSendQueue = 4;
// A poll unanswered this long is given up and sent again (an agent that restarted lost it).
constexpr double kMinReplyWait = 2.0;
// How long the application may stay unknown to the agent before that is worth a line.
constexpr double kRegisterGrace = 5.0;

double now()
{
	using namespace std::chrono;
	return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// The fields of a `command` reply, checked as the agent checks what it receives: a reply that does not fit is no
// command at all.
bool commandFromReply(const nlohmann::json &reply, Command &command, std::uint64_t &id, std::string &problem)
{
	const auto op = reply.find("op");
	if (op == reply.end() || !op->is_string()) {
		problem = "a command without an op";
		return false;
	}
	if (*op == "none")
		return false;
	if (!operationFromName(op->get<std::string>(), command.op)) {
		problem = "a command with op '" + op->get<std::string>().substr(0, 16) + "'";
		return false;
	}
	const auto commandId = reply.find("command");
	const auto count = reply.find("count");
	if (commandId == reply.end() || !commandId->is_number_unsigned() || commandId->get<std::uint64_t>() == 0 ||
	    count == reply.end() || !count->is_number_unsigned() || count->get<std::uint64_t>() < 1 ||
	    count->get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxCommandCount)) {
		problem = "a command without a valid id or count";
		return false;
	}
	id = commandId->get<std::uint64_t>();
	command.count = static_cast<int>(count->get<std::uint64_t>());
	if (const auto node = reply.find("node"); node != reply.end()) {
		if (!node->is_string() || node->get_ref<const std::string &>().empty() ||
		    node->get_ref<const std::string &>().size() > 255) {
			problem = "a command with a bad node";
			return false;
		}
		command.node = node->get<std::string>();
	}
	if (const auto weights = reply.find("weights"); weights != reply.end()) {
		if (!weights->is_array() || weights->size() > kMaxWeights) {
			problem = "a command with bad weights";
			return false;
		}
		for (const auto &w : *weights) {
			if (!w.is_number_unsigned() || w.get<std::uint64_t>() < 1 ||
			    w.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxWeight)) {
				problem = "a command with bad weights";
				return false;
			}
			command.weights.push_back(static_cast<std::int64_t>(w.get<std::uint64_t>()));
		}
	}
	return true;
}

} // namespace

AgentCommands::~AgentCommands()
{
	if (socket_)
		zmq_close(socket_);
	if (context_)
		zmq_ctx_term(context_);
}

void AgentCommands::warn(const std::string &line)
{
	if (line == lastWarning_)
		return;
	lastWarning_ = line;
	std::fprintf(stderr, "malleo-pcm: %s\n", line.c_str());
}

RootAgent AgentCommands::registeredHere()
{
	// libmalleo_pmpi registered the application under `<program>-<job>` (the job id from the launcher or rank 0's
	// pid): asking the library, rather than deriving the id again here, keeps the two equal by construction.
	const char *app = MALLEO_App_id ? MALLEO_App_id() : nullptr;
	const char *endpoint = MALLEO_Agent_endpoint ? MALLEO_Agent_endpoint() : nullptr;
	RootAgent root{app ? app : "", endpoint ? endpoint : "", ""};
	// The agent writes agent.json next to agent.sock in its run directory (docs/protocol.md); an agent without a
	// remote endpoint, an older one or none at all leaves `remote` empty.
	const std::string ipc = "ipc://", socket = "/agent.sock";
	if (root.local.starts_with(ipc) && root.local.ends_with(socket)) {
		const std::string dir = root.local.substr(ipc.size(), root.local.size() - ipc.size() - socket.size());
		std::FILE *file = std::fopen((dir + "/agent.json").c_str(), "r");
		if (file) {
			const nlohmann::json info = nlohmann::json::parse(file, nullptr, false);
			std::fclose(file);
			const auto remote = info.is_object() ? info.find("app_remote") : info.end();
			if (remote != info.end() && remote->is_string() &&
			    remote->get_ref<const std::string &>().starts_with("tcp://"))
				root.remote = remote->get<std::string>();
		}
	}
	return root;
}

void AgentCommands::setApplication(RootAgent root, bool onRootNode)
{
	root_ = std::move(root);
	onRootNode_ = onRootNode;
	app_ = root_.app;
	endpoint_ = onRootNode_ || root_.remote.empty() ? root_.local : root_.remote;
}

bool AgentCommands::connect()
{
	if (state_ != State::unconfigured)
		return state_ == State::on;
	state_ = State::off;
	// Without the profiler nothing registered the application, so no agent would have a command for it.
	if (app_.empty()) {
		const char *asked = std::getenv("MALLEO_AGENT");
		if (asked && *asked && std::strcmp(asked, "off") && std::strcmp(asked, "none"))
			warn(std::string("MALLEO_AGENT is set but libmalleo_pmpi is not preloaded: no application id to ask "
					 "the agent for commands under"));
		return false;
	}
	if (endpoint_.empty())
		return false;
	if (!onRootNode_ && root_.remote.empty())
		warn("the application's root agent is on another node and offers no remote endpoint (its app_listen is "
		     "off, or it predates it): polling " + endpoint_ + ", which may not reach it");
	if (const char *value = std::getenv("MALLEO_POLL_INTERVAL"); value && *value) {
		char *end = nullptr;
		const double seconds = std::strtod(value, &end);
		if (*end || !(seconds >= 0.01 && seconds <= 3600))
			warn(std::string("MALLEO_POLL_INTERVAL=") + value +
			     " is not a number of seconds in [0.01, 3600]; using 0.2");
		else
			interval_ = seconds;
	}
	context_ = zmq_ctx_new();
	socket_ = context_ ? zmq_socket(context_, ZMQ_DEALER) : nullptr;
	if (!socket_) {
		warn("cannot open a socket to the agent: " + std::string(zmq_strerror(zmq_errno())));
		return false;
	}
	const int zero = 0, queue = kSendQueue;
	const std::int64_t maxBytes = kMaxReplyBytes;
	zmq_setsockopt(socket_, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(socket_, ZMQ_SNDHWM, &queue, sizeof(queue));
	zmq_setsockopt(socket_, ZMQ_MAXMSGSIZE, &maxBytes, sizeof(maxBytes));
	if (zmq_connect(socket_, endpoint_.c_str()) != 0) {
		warn("MALLEO_AGENT=" + endpoint_ + ": " + zmq_strerror(zmq_errno()) + "; no commands from the agent");
		return false;
	}
	state_ = State::on;
	return true;
}

bool AgentCommands::send(const std::string &body)
{
	const std::uint32_t seq = ++sequence_;
	const std::uint8_t header[kWireHeaderSize] = {kWireMagic,	      kWireVersion,	      0, 0,
						      std::uint8_t(seq >> 24), std::uint8_t(seq >> 16),
						      std::uint8_t(seq >> 8),  std::uint8_t(seq)};
	// Once the first frame is queued ZeroMQ queues the second too: a message goes whole or not at all.
	return zmq_send(socket_, header, sizeof(header), ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
	       zmq_send(socket_, body.data(), body.size(), ZMQ_DONTWAIT) >= 0;
}

void AgentCommands::sendPoll(std::int64_t iteration, int active)
{
	const nlohmann::json poll = {{"v", 1},	       {"type", "poll"},	{"from", kClientName},
				     {"id", nextId_++}, {"app", app_},		{"iteration", iteration},
				     {"size", active}};
	const std::vector<std::uint8_t> body = nlohmann::json::to_msgpack(poll);
	const double t = now();
	if (firstPollAt_ == 0.0)
		firstPollAt_ = t;
	nextPollAt_ = t + interval_;
	if (!send(std::string(body.begin(), body.end()))) {
		warn("the agent at " + endpoint_ + " takes no messages (absent or slow); polling on");
		return;
	}
	awaiting_ = true;
	polledAt_ = t;
}

void AgentCommands::drain()
{
	for (;;) {
		std::vector<std::string> frames;
		for (int more = 1; more;) {
			zmq_msg_t part;
			zmq_msg_init(&part);
			if (zmq_msg_recv(&part, socket_, ZMQ_DONTWAIT) < 0) {
				zmq_msg_close(&part);
				if (frames.empty())
					return;
				break;  // the rest of a message never comes apart from it: drop what we have
			}
			frames.emplace_back(static_cast<const char *>(zmq_msg_data(&part)), zmq_msg_size(&part));
			more = zmq_msg_more(&part);
			zmq_msg_close(&part);
		}
		const bool headerOk = frames.size() == 2 && frames[0].size() == kWireHeaderSize &&
				      std::uint8_t(frames[0][0]) == kWireMagic && std::uint8_t(frames[0][1]) == kWireVersion;
		if (!headerOk) {
			warn("an unreadable reply from the agent at " + endpoint_ + " (bad framing); ignored");
			continue;
		}
		nlohmann::json reply;
		try {
			reply = (std::uint8_t(frames[0][2]) & kWireFlagJson) ? nlohmann::json::parse(frames[1])
									    : nlohmann::json::from_msgpack(frames[1]);
		} catch (const std::exception &) {
			warn("an unreadable reply from the agent at " + endpoint_ + " (bad body); ignored");
			continue;
		}
		accept(reply);
	}
}

void AgentCommands::accept(const nlohmann::json &reply)
{
	const auto type = reply.is_object() ? reply.find("type") : reply.end();
	if (type == reply.end() || !type->is_string()) {
		warn("a reply without a type from the agent at " + endpoint_ + "; ignored");
		return;
	}
	if (*type == "ack")
		return;
	if (*type == "error") {
		const std::string code = reply.value("code", std::string("?"));
		const std::string text = reply.value("text", std::string("?"));
		// A refused poll is answered all the same: it is not outstanding any more.
		awaiting_ = false;
		// The profiler registers from its own thread and socket, so the first polls may overtake it.
		if (code == "unknown_app" && now() - firstPollAt_ < kRegisterGrace)
			return;
		warn("the agent at " + endpoint_ + " refused a request for " + app_ + ": " + text.substr(0, kMaxText) +
		     " (" + code.substr(0, 64) + ")");
		return;
	}
	if (*type != "command") {
		warn("an unexpected '" + type->get<std::string>().substr(0, 32) + "' reply from the agent at " +
		     endpoint_ + "; ignored");
		return;
	}
	awaiting_ = false;
	Command command;
	std::uint64_t id = 0;
	std::string problem;
	if (!commandFromReply(reply, command, id, problem)) {
		if (!problem.empty())
			warn("the agent at " + endpoint_ + " sent " + problem + "; ignored");
		return;
	}
	ready_ = command;
	readyId_ = id;
}

Command AgentCommands::take(std::int64_t iteration, int active)
{
	if (taken_ && taken_->iteration == iteration)
		return *taken_;
	Command none;
	none.iteration = iteration;
	if (!connect())
		return none;
	// Every command ends in finish() within its probe; one still open here lost its outcome on the way.
	if (taken_)
		finish(taken_->iteration, false, "the bridge lost the outcome of the operation", -1, -1, -1);
	drain();
	if (ready_) {
		taken_ = ready_;
		taken_->iteration = iteration;
		takenId_ = readyId_;
		takenAt_ = now();
		ready_.reset();
		return *taken_;
	}
	const double t = now();
	if (awaiting_ && t - polledAt_ > std::max(kMinReplyWait, 10 * interval_)) {
		warn("no reply from the agent at " + endpoint_ + " within " +
		     std::to_string(static_cast<int>(std::max(kMinReplyWait, 10 * interval_))) + " s; polling on");
		awaiting_ = false;
	}
	if (!awaiting_ && t >= nextPollAt_)
		sendPoll(iteration, active);
	return none;
}

void AgentCommands::retake(std::int64_t from, std::int64_t to)
{
	if (taken_ && taken_->iteration == from)
		taken_->iteration = to;
}

void AgentCommands::finish(std::int64_t iteration, bool ok, const std::string &text, std::int64_t before,
			   std::int64_t after, std::int64_t bytes)
{
	if (!taken_ || taken_->iteration != iteration)
		return;
	std::string line = text;
	if (line.empty())
		line = std::string(operationName(taken_->op)) + " at iteration " + std::to_string(iteration) + ": " +
		       std::to_string(before) + " -> " + std::to_string(after) + " processes";
	nlohmann::json result = {{"v", 1},
				 {"type", "result"},
				 {"from", kClientName},
				 {"id", nextId_++},
				 {"app", app_},
				 {"command", takenId_},
				 {"ok", ok},
				 {"text", line.substr(0, kMaxText)},
				 {"iteration", taken_->iteration},
				 {"duration", now() - takenAt_}};
	if (before >= 0)
		result["before"] = before;
	if (after >= 0)
		result["after"] = after;
	if (bytes >= 0)
		result["bytes"] = bytes;
	taken_.reset();
	const std::vector<std::uint8_t> body = nlohmann::json::to_msgpack(result);
	if (!send(std::string(body.begin(), body.end())))
		warn("the agent at " + endpoint_ + " takes no messages: the result of command " +
		     std::to_string(takenId_) + " is lost");
}

} // namespace malleo::pcm
