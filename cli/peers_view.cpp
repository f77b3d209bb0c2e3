// SPDX-License-Identifier: Apache-2.0
// `malleo peers`: the peers one agent knows, with what they last reported.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "agent_client.h"
#include "commands.h"
#include "human_units.h"
#include "reply_fields.h"
#include "target.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

void printTable(const nlohmann::json &peers)
{
	TextTable table({"ID", "ENDPOINT", "GROUP", "IN_VIEW", "LAST_HEARD", "APW", "UPW", "PW"});
	for (std::size_t c : {4, 5, 6, 7})
		table.alignRight(c);
	for (const nlohmann::json &p : peers) {
		const nlohmann::json *inView = field(p, {"in_view"});
		std::optional<double> heard = number(p, {"last_heard"});
		table.addRow({text(p, {"id"}), text(p, {"endpoint"}), text(p, {"group"}),
			      inView && inView->is_boolean() ? (inView->get<bool>() ? "yes" : "no") : "-",
			      heard ? formatDuration(*heard) + " ago" : "-", fixed(p, {"profile", "apw"}, 2),
			      fixed(p, {"profile", "upw"}, 2), fixed(p, {"profile", "pw"}, 2)});
	}
	std::cout << table.render();
}

} // namespace

int peersCommand(const GlobalOptions &options, bool json)
{
	Failure failure;
	std::optional<Target> target = singleTarget(options, failure);
	if (!target)
		return report(failure);
	zmq::context_t context(1);
	std::unique_ptr<AgentClient> client = AgentClient::create(context, target->endpoint, options.timeout, failure);
	if (!client)
		return report(failure);
	std::optional<Message> reply = client->request("peers", failure);
	if (!reply)
		return report(failure);
	const nlohmann::json *list = field(*reply, {"peers"});
	if ((*reply)["type"] != "peers_reply" || !list || !list->is_array())
		return report({kExitFailed, fmt::format("the agent at {} answered 'peers' with '{}' "
							"and no peer list",
							target->endpoint, text(*reply, {"type"}))});
	nlohmann::json peers = *list;
	std::sort(peers.begin(), peers.end(), [](const nlohmann::json &a, const nlohmann::json &b) {
		return text(a, {"id"}) < text(b, {"id"});
	});
	if (json) {
		nlohmann::json out = {{"agent", (*reply)["from"]}, {"peers", peers}};
		std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
		return kExitOk;
	}
	std::cout << fmt::format("agent {}: {} peer{}\n", text(*reply, {"from"}), peers.size(),
				 peers.size() == 1 ? "" : "s");
	if (!peers.empty())
		printTable(peers);
	return kExitOk;
}

} // namespace malleo::cli
