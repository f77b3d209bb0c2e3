// SPDX-License-Identifier: Apache-2.0
// `malleo peers`: the peers one agent knows, with what they last reported.
#include <iostream>

#include <fmt/format.h>

#include "views.h"
#include "human_units.h"
#include "list_request.h"
#include "reply_fields.h"
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
	std::optional<ListReply> r = requestList(options, "peers", "peers", "id", failure);
	if (!r)
		return report(failure);
	const nlohmann::json &peers = r->list;
	if (json) {
		nlohmann::json out = {{"agent", r->reply["from"]}, {"peers", peers}};
		std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
		return kExitOk;
	}
	std::cout << fmt::format("agent {}: {} peer{}\n", text(r->reply, {"from"}), peers.size(),
				 peers.size() == 1 ? "" : "s");
	if (!peers.empty())
		printTable(peers);
	return kExitOk;
}

} // namespace malleo::cli
