// SPDX-License-Identifier: Apache-2.0
#include "agent_commands.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.h>

#include <malleo/message.h>

// MALLEO_App_id and MALLEO_Agent_endpoint, declared weak there: the bridge runs with or without the profiler.
#include "malleo_pmpi.h"
#include "plan/remaining.h"

namespace malleo::pcm {

namespace {

// The wire format is the agent's own (malleo_wire, <malleo/message.h>): its envelope, codec and limits.
constexpr const char *kClientName = "malleo-pcm";
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

namespace {

// The agent.json an agent writes next to its local socket (docs/protocol.md): its endpoints, its public key and its
// secret key's file. Null when the endpoint is no local socket or the file cannot be read.
nlohmann::json agentFileOf(const std::string &local)
{
	const std::string ipc = "ipc://", socket = "/agent.sock";
	if (!local.starts_with(ipc) || !local.ends_with(socket))
		return nullptr;
	const std::string dir = local.substr(ipc.size(), local.size() - ipc.size() - socket.size());
	std::FILE *file = std::fopen((dir + "/agent.json").c_str(), "r");
	if (!file)
		return nullptr;
	nlohmann::json info = nlohmann::json::parse(file, nullptr, false);
	std::fclose(file);
	return info.is_object() ? info : nullptr;
}

std::string textField(const nlohmann::json &info, const char *key)
{
	const auto it = info.is_object() ? info.find(key) : info.end();
	return it != info.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The key line of a key file of `malleo keygen` ('#' lines are comments); empty if there is none.
std::string readKey(const std::string &path)
{
	std::FILE *file = std::fopen(path.c_str(), "r");
	if (!file)
		return {};
	char line[256];
	std::string key;
	while (std::fgets(line, sizeof(line), file)) {
		std::string text(line);
		while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
			text.pop_back();
		if (!text.empty() && text[0] != '#') {
			key = text;
			break;
		}
	}
	std::fclose(file);
	return key.size() == 40 ? key : std::string();
}

} // namespace

RootAgent AgentCommands::registeredHere()
{
	// libmalleo_pmpi registered the application under `<program>-<job>` (the job id from the launcher or rank 0's
	// pid): asking the library, rather than deriving the id again here, keeps the two equal by construction.
	const char *app = MALLEO_App_id ? MALLEO_App_id() : nullptr;
	const char *endpoint = MALLEO_Agent_endpoint ? MALLEO_Agent_endpoint() : nullptr;
	RootAgent root{app ? app : "", endpoint ? endpoint : "", "", ""};
	// The agent writes agent.json next to agent.sock in its run directory (docs/protocol.md); an agent without a
	// remote endpoint, an older one or none at all leaves `remote` empty.
	const nlohmann::json info = agentFileOf(root.local);
	if (std::string remote = textField(info, "app_remote"); remote.starts_with("tcp://")) {
		root.remote = remote;
		// An authenticated agent (security.secret_key) names its public key: its remote endpoint is CURVE.
		root.remoteKey = textField(info, "public_key");
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
	if (state_ != State::Unconfigured)
		return state_ == State::On;
	state_ = State::Off;
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
	const std::int64_t maxBytes = kDefaultMaxMessageBytes;
	zmq_setsockopt(socket_, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(socket_, ZMQ_SNDHWM, &queue, sizeof(queue));
	zmq_setsockopt(socket_, ZMQ_MAXMSGSIZE, &maxBytes, sizeof(maxBytes));
	if (endpoint_ == root_.remote && !root_.remoteKey.empty() && !authenticate())
		return false;
	if (zmq_connect(socket_, endpoint_.c_str()) != 0) {
		warn("MALLEO_AGENT=" + endpoint_ + ": " + zmq_strerror(zmq_errno()) + "; no commands from the agent");
		return false;
	}
	state_ = State::On;
	return true;
}

// The coordinator on another node than the root agent's speaks as its own node, with the key its node's agent has
// (the file agent.json names, or MALLEO_SECRET_KEY): the root agent lets in the nodes of its allowed keys.
bool AgentCommands::authenticate()
{
	std::string keyFile;
	if (const char *asked = std::getenv("MALLEO_SECRET_KEY"); asked && *asked)
		keyFile = asked;
	else if (const char *local = MALLEO_Agent_endpoint ? MALLEO_Agent_endpoint() : nullptr)
		keyFile = textField(agentFileOf(local), "secret_key_file");
	const std::string secret = keyFile.empty() ? std::string() : readKey(keyFile);
	char publicKey[41] = {};
	if (secret.empty() || zmq_curve_public(publicKey, secret.c_str()) != 0) {
		warn("the root agent's remote endpoint " + endpoint_ + " takes authenticated nodes only, and " +
		     (keyFile.empty() ? std::string("this node's agent names no key (security.secret_key); set "
						    "MALLEO_SECRET_KEY to this node's .key file")
				      : "the key file " + keyFile + " cannot be read as a CURVE secret key") +
		     "; no commands from the agent");
		return false;
	}
	zmq_setsockopt(socket_, ZMQ_CURVE_SERVERKEY, root_.remoteKey.c_str(), root_.remoteKey.size());
	zmq_setsockopt(socket_, ZMQ_CURVE_PUBLICKEY, publicKey, 40);
	zmq_setsockopt(socket_, ZMQ_CURVE_SECRETKEY, secret.c_str(), secret.size());
	return true;
}

bool AgentCommands::send(const nlohmann::json &message)
{
	const WireFrames frames = encodeMessage(message, ++sequence_);
	// Once the first frame is queued ZeroMQ queues the second too: a message goes whole or not at all.
	return zmq_send(socket_, frames.header.data(), frames.header.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
	       zmq_send(socket_, frames.body.data(), frames.body.size(), ZMQ_DONTWAIT) >= 0;
}

void AgentCommands::sendPoll(std::int64_t iteration, int active)
{
	Message poll = makeMessage("poll", kClientName, nextId_++);
	poll["app"] = app_;
	poll["iteration"] = iteration;
	poll["size"] = active;
	if (const std::int64_t remaining = remainingAtProbe(remaining_, remainingAt_, iteration); remaining >= 0)
		poll["remaining"] = remaining;
	const double t = now();
	if (firstPollAt_ == 0.0)
		firstPollAt_ = t;
	nextPollAt_ = t + interval_;
	if (!send(poll)) {
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
		if (frames.size() != 2) {
			warn("an unreadable reply from the agent at " + endpoint_ + " (bad framing); ignored");
			continue;
		}
		auto bytes = [](const std::string &frame) {
			return std::span(reinterpret_cast<const std::uint8_t *>(frame.data()), frame.size());
		};
		Message reply;
		if (std::optional<Rejection> bad =
			    decodeMessage(bytes(frames[0]), bytes(frames[1]), kDefaultMaxMessageBytes, reply)) {
			warn("an unreadable reply from the agent at " + endpoint_ + " (" + bad->reason + ": " +
			     bad->detail + "); ignored");
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
		// The profiler registers from its own thread and socket, so the first polls may overtake it; an agent that
		// knew the application and no longer does was restarted, and the processes register again at their next
		// report.
		if (code == "unknown_app" && known_) {
			known_ = false;
			forgottenAt_ = now();
			warn("the agent at " + endpoint_ + " no longer knows " + app_ +
			     " (it restarted): the processes register again at their next report");
		}
		if (code == "unknown_app" &&
		    (now() - firstPollAt_ < kRegisterGrace || now() - forgottenAt_ < kRegisterGrace))
			return;
		warn("the agent at " + endpoint_ + " refused a request for " + app_ + ": " +
		     text.substr(0, kResultTextCut) + " (" + code.substr(0, 64) + ")");
		return;
	}
	if (*type != "command") {
		warn("an unexpected '" + type->get<std::string>().substr(0, 32) + "' reply from the agent at " +
		     endpoint_ + "; ignored");
		return;
	}
	awaiting_ = false;
	known_ = true;
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
	if (taken_ && takenIteration_ == iteration)
		return *taken_;
	const Command none{Operation::None};
	if (!connect())
		return none;
	// Every command ends in finish() within its probe; one still open here lost its outcome on the way.
	if (taken_)
		finish(takenIteration_, false, "the bridge lost the outcome of the operation", -1, -1, -1);
	drain();
	if (ready_) {
		taken_ = ready_;
		takenIteration_ = iteration;
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

void AgentCommands::setRemaining(std::int64_t remaining, std::int64_t probe)
{
	remaining_ = remaining;
	remainingAt_ = probe;
}

void AgentCommands::retake(std::int64_t from, std::int64_t to)
{
	if (taken_ && takenIteration_ == from)
		takenIteration_ = to;
}

void AgentCommands::finish(std::int64_t iteration, bool ok, const std::string &text, std::int64_t before,
			   std::int64_t after, std::int64_t bytes, const Refusal &refusal)
{
	if (!taken_ || takenIteration_ != iteration)
		return;
	std::string line = text;
	if (line.empty())
		line = std::string(operationName(taken_->op)) + " at iteration " + std::to_string(iteration) + ": " +
		       std::to_string(before) + " -> " + std::to_string(after) + " processes";
	Message result = makeMessage("result", kClientName, nextId_++);
	result["app"] = app_;
	result["command"] = takenId_;
	result["ok"] = ok;
	result["text"] = line.substr(0, kResultTextCut);
	result["iteration"] = takenIteration_;
	result["duration"] = now() - takenAt_;
	if (before >= 0)
		result["before"] = before;
	if (after >= 0)
		result["after"] = after;
	if (bytes >= 0)
		result["bytes"] = bytes;
	if (!ok) {
		result["refusal"] = {{"kind", refusal.kind}};
		if (refusal.most >= 0)
			result["refusal"]["most"] = refusal.most;
	}
	taken_.reset();
	if (!send(result))
		warn("the agent at " + endpoint_ + " takes no messages: the result of command " +
		     std::to_string(takenId_) + " is lost");
}

} // namespace malleo::pcm
