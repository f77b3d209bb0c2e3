// SPDX-License-Identifier: Apache-2.0
#include "list_request.h"

#include <algorithm>

#include <fmt/format.h>

#include "agent_client.h"
#include "reply_fields.h"
#include "target.h"

namespace malleo::cli {

std::optional<ListReply> requestList(const GlobalOptions &options, const std::string &type,
				     const std::string &field, const std::string &key,
				     Failure &failure)
{
	zmq::context_t context(1);
	std::unique_ptr<AgentClient> client = connectSingleTarget(context, options, failure);
	if (!client)
		return std::nullopt;
	std::optional<Message> reply = client->request(type, failure);
	if (!reply)
		return std::nullopt;
	const nlohmann::json *list = cli::field(*reply, {field.c_str()});
	if ((*reply)["type"] != type + "_reply" || !list || !list->is_array()) {
		failure = {kExitFailed, fmt::format("the agent at {} answered '{}' with '{}' and no {} list",
						    client->endpoint(), type, text(*reply, {"type"}), field)};
		return std::nullopt;
	}
	ListReply out{*reply, *list};
	std::sort(out.list.begin(), out.list.end(), [&](const nlohmann::json &a, const nlohmann::json &b) {
		return text(a, {key.c_str()}) < text(b, {key.c_str()});
	});
	return out;
}

} // namespace malleo::cli
