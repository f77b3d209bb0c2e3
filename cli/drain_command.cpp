// SPDX-License-Identifier: Apache-2.0
// `malleo drain [NODE]`: a node leaves gracefully. Its agent asks its decision module to move the processes it hosts
// to other nodes and exits once it hosts none, or at its deadline; SIGTERM to the agent does the same. With --wait,
// follows the agent's events until it says it is done and then until it is gone.
#include <chrono>
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include <malleo/message.h>

#include "agent_client.h"
#include "commands.h"
#include "interrupt.h"
#include "reply_fields.h"
#include "target.h"

namespace malleo::cli {

namespace {

// Follows the draining agent's events until `drained` or `drain_deadline`, then until its endpoint stops
// answering (it has left).
int awaitDrain(AgentClient &client, const DrainOptions &drain, double started)
{
	const double deadline = steadyNow() + *drain.wait;
	catchInterrupts();
	std::optional<nlohmann::json> end;
	while (!end) {
		for (const Message &m : client.drain()) {
			const nlohmann::json *event = field(m, {"event"});
			const std::string type = event ? event->value("type", "") : "";
			if (type == "drained" || type == "drain_deadline")
				end = *event;
		}
		if (end)
			break;
		const double left = deadline - steadyNow();
		if (left <= 0 || interrupted())
			return report({kExitFailed, fmt::format("the agent at {} is still draining after {} s",
								client.endpoint(), *drain.wait)});
		zmq::pollitem_t item = client.pollItem();
		try {
			zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<long>(std::ceil(std::min(left, 0.5) * 1000))));
		} catch (const zmq::error_t &e) {
			if (e.num() != EINTR)
				throw;
		}
	}
	const bool clean = end->value("type", "") == "drained";
	const double took = steadyNow() - started;
	if (drain.json) {
		nlohmann::json out = *end;
		out["seconds"] = took;
		std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
	} else if (clean) {
		std::cout << fmt::format("{} drained in {:.2f} s: it hosts no active process and leaves\n",
					 text(*end, {"agent"}), took);
	} else {
		std::cout << fmt::format("{} reached its drain deadline after {:.2f} s with {} active processes left: "
					 "it leaves anyway\n",
					 text(*end, {"agent"}), took, text(*end, {"active"}));
	}
	return clean ? kExitOk : kExitFailed;
}

} // namespace

int drainCommand(GlobalOptions options, const DrainOptions &drain)
{
	if (!drain.node.empty()) {
		if (!options.node.empty() && options.node != drain.node)
			return report({kExitBadInput, fmt::format("drain: node '{}' and --node {} disagree", drain.node,
								  options.node)});
		options.node = drain.node;
	}
	if (drain.deadline && !(*drain.deadline > 0))
		return report({kExitBadInput, "drain: --deadline must be a positive number of seconds"});
	Failure failure;
	zmq::context_t context(1);
	std::unique_ptr<AgentClient> client = connectSingleTarget(context, options, failure);
	if (!client)
		return report(failure);
	const double started = steadyNow();
	if (drain.wait && !client->request("events", failure))
		return report(failure);
	nlohmann::json fields = nlohmann::json::object();
	if (drain.deadline)
		fields["deadline"] = *drain.deadline;
	std::optional<Message> reply = client->request("drain", failure, fields);
	if (!reply)
		return report(failure);
	if (drain.wait)
		return awaitDrain(*client, drain, started);
	if (drain.json)
		std::cout << reply->dump() << '\n';
	else
		std::cout << fmt::format("{} drains: {} active processes to move, leaves within {:.0f} s\n",
					 text(*reply, {"from"}), text(*reply, {"active"}),
					 reply->value("deadline", 0.0));
	return kExitOk;
}

} // namespace malleo::cli
