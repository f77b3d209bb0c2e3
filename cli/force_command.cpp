// SPDX-License-Identifier: Apache-2.0
// `malleo force APP split|merge|migrate COUNT`: the papers' actuator. Queues a
// command with the agent hosting the application's rank 0; its bridge takes it
// at a probe. With --wait, follows the agent's events until the command's
// result (an event is kept by the agent even when the application ends right
// after it, which a look at `apps` would miss).
#include <chrono>
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include <malleo/message.h>

#include "agent_client.h"
#include "commands.h"
#include "human_units.h"
#include "interrupt.h"
#include "reply_fields.h"
#include "target.h"

namespace malleo::cli {

namespace {

// Digits only, few enough to fit: the range is checkCommand's.
bool parseDigits(const std::string &text, long long &value)
{
	if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
		return false;
	value = std::stoll(text);
	return true;
}

std::optional<Failure> checkInput(const ForceOptions &force, nlohmann::json &fields)
{
	long long count = 0;
	if (!parseDigits(force.count, count))
		return Failure{kExitBadInput, fmt::format("force: count '{}' is not a positive integer", force.count)};
	fields = {{"app", force.app}, {"op", force.op}, {"count", count}};
	if (force.node)
		fields["node"] = *force.node;
	if (force.from)
		fields["from_node"] = *force.from;
	if (force.weights) {
		nlohmann::json weights = nlohmann::json::array();
		std::size_t start = 0;
		for (;;) {
			const std::size_t comma = force.weights->find(',', start);
			const std::string w = force.weights->substr(start, comma == std::string::npos ? comma : comma - start);
			long long value = 0;
			if (!parseDigits(w, value))
				return Failure{kExitBadInput, fmt::format("force: weight '{}' in --weights {} is not a "
									  "positive integer",
									  w, *force.weights)};
			weights.push_back(value);
			if (comma == std::string::npos)
				break;
			start = comma + 1;
		}
		fields["weights"] = std::move(weights);
	}
	// The agent refuses what checkCommand refuses; asking it here first saves an agent the round trip and the
	// user a refusal counted there.
	if (std::optional<std::string> problem = checkCommand(fields))
		return Failure{kExitBadInput, "force: " + *problem};
	return std::nullopt;
}

// "command 3 ok: split at iteration 57: 2 -> 4 processes (0.410 s, 150.0 MiB moved)".
std::string outcomeLine(const nlohmann::json &event)
{
	std::string line = fmt::format("command {} {}: {}", text(event, {"command"}),
				       event.value("ok", false) ? "ok" : "failed", text(event, {"text"}));
	const std::optional<double> seconds = number(event, {"duration"}), bytes = number(event, {"bytes"});
	if (seconds && bytes)
		line += fmt::format(" ({:.3f} s, {} moved)", *seconds, formatBytes(*bytes));
	else if (seconds)
		line += fmt::format(" ({:.3f} s)", *seconds);
	return line;
}

// What --wait waits for: the command's result on the agent hosting rank 0, or, for a `force` another agent routed
// there, the reconf_result that agent receives for its request.
struct Awaited {
	uint64_t command = 0;
	uint64_t request = 0;
};

// The event that ends the wait, if `m` is one.
const nlohmann::json *endOfWait(const Message &m, const ForceOptions &force, Awaited awaited)
{
	const nlohmann::json *event = field(m, {"event"});
	if (m.value("type", "") != "event" || !event || event->value("app", "") != force.app)
		return nullptr;
	const std::string type = event->value("type", "");
	const char *key = awaited.request ? "request" : "command";
	const nlohmann::json *id = field(*event, {key});
	if (!id || !id->is_number_unsigned() || id->get<uint64_t>() != (awaited.request ? awaited.request : awaited.command))
		return nullptr;
	if (awaited.request)
		return (type == "reconf_result" && event->value("origin", "") == m.value("from", "")) ||
			       type == "reconf_timeout"
			   ? event
			   : nullptr;
	return type == "command_result" || type == "command_dropped" ? event : nullptr;
}

// Follows the events the agent pushes after `events_ok` until this command's
// result, its drop, or the deadline.
int awaitResult(AgentClient &client, const ForceOptions &force, Awaited awaited)
{
	const double deadline = steadyNow() + *force.wait;
	const std::string what = awaited.request ? fmt::format("request {}", awaited.request)
						 : fmt::format("command {}", awaited.command);
	catchInterrupts();
	for (;;) {
		std::string problem;
		for (const Message &m : client.drain(&problem)) {
			const nlohmann::json *event = endOfWait(m, force, awaited);
			if (!event)
				continue;
			if (event->value("type", "") == "command_dropped")
				return report({kExitFailed, fmt::format("command {} dropped before its result: {}",
									awaited.command, text(*event, {"why"}))});
			if (event->value("type", "") == "reconf_timeout")
				return report({kExitFailed, fmt::format("request {}: no result from {}, the agent hosting rank "
									"0, within {:.0f} s (it may have died)",
									awaited.request, text(*event, {"root"}),
									event->value("waited", 0.0))});
			if (force.json) {
				nlohmann::json out = *event;
				out["agent"] = m.value("from", "");
				std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
			} else {
				std::cout << outcomeLine(*event) << '\n';
			}
			return event->value("ok", false) ? kExitOk : kExitFailed;
		}
		if (client.gone())
			return report({kExitFailed,
				       fmt::format("the agent at {} exited while {} of {} was pending: its outcome is unknown "
						   "(an agent restarted in the same run directory reports it: `malleo "
						   "events`)",
						   client.endpoint(), what, force.app)});
		const double left = deadline - steadyNow();
		if (left <= 0 || interrupted())
			return report({kExitFailed, fmt::format("no result for {} of {} within {} s (it may still "
								"run; see `malleo apps`)",
								what, force.app, *force.wait)});
		zmq::pollitem_t item = client.pollItem();
		try {
			zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<long>(std::ceil(std::min(left, 0.2) * 1000))));
		} catch (const zmq::error_t &e) {
			if (e.num() != EINTR)
				throw;
		}
	}
}

} // namespace

int forceCommand(const GlobalOptions &options, const ForceOptions &force)
{
	nlohmann::json fields;
	if (std::optional<Failure> bad = checkInput(force, fields))
		return report(*bad);
	Failure failure;
	zmq::context_t context(1);
	std::unique_ptr<AgentClient> client = connectSingleTarget(context, options, failure);
	if (!client)
		return report(failure);
	// Subscribed before the command exists, so its result cannot slip past.
	if (force.wait && !client->request("events", failure))
		return report(failure);
	if (force.wait)
		client->watch(context);
	std::optional<Message> reply = client->request("force", failure, fields);
	if (!reply) {
		// A refusal is about what was asked (unknown application, busy, ...), not about the agent.
		if (failure.refused)
			failure.status = kExitBadInput;
		return report(failure);
	}
	// Routed: the agent asked the one hosting rank 0 (`routed_to`), whose answer comes back to it as a result.
	const nlohmann::json *command = field(*reply, {"command"});
	const nlohmann::json *request = field(*reply, {"request"});
	const bool routed = request && request->is_number_unsigned() && request->get<uint64_t>() > 0;
	if ((*reply)["type"] != "force_reply" || (!routed && (!command || !command->is_number_unsigned())))
		return report({kExitFailed, fmt::format("the agent at {} answered 'force' with '{}' and no command id",
							client->endpoint(), text(*reply, {"type"}))});
	// The agent takes a program's name for the one application it names (heat2d_openmpi: heat2d_openmpi-1234):
	// from here on, the id it answered for.
	ForceOptions meant = force;
	if (const nlohmann::json *app = field(*reply, {"app"}); app && app->is_string())
		meant.app = app->get<std::string>();
	if (meant.wait)
		return awaitResult(*client, meant,
				   routed ? Awaited{0, request->get<uint64_t>()} : Awaited{command->get<uint64_t>(), 0});
	if (meant.json) {
		nlohmann::json out = {{"agent", (*reply)["from"]}, {"app", meant.app}};
		if (routed)
			out.update({{"request", *request}, {"routed_to", (*reply)["routed_to"]}});
		else
			out["command"] = *command;
		std::cout << out.dump() << '\n';
	} else if (routed) {
		std::cout << fmt::format("request {} sent: {} {} of {} (agent {} routed it to {}, which hosts rank 0)\n",
					 request->get<uint64_t>(), meant.op, text(fields, {"count"}), meant.app,
					 text(*reply, {"from"}), text(*reply, {"routed_to"}));
	} else {
		std::cout << fmt::format("command {} queued: {} {} of {} (agent {})\n", command->get<uint64_t>(), meant.op,
					 text(fields, {"count"}), meant.app, text(*reply, {"from"}));
	}
	return kExitOk;
}

} // namespace malleo::cli
