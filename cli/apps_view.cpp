// SPDX-License-Identifier: Apache-2.0
// `malleo apps`: the MPI applications registered with one agent, their
// processes on the node and what they reported.
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "human_units.h"
#include "list_request.h"
#include "reply_fields.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

void printApp(const nlohmann::json &app)
{
	const nlohmann::json *sizes = field(app, {"iteration_times"});
	std::string last = "-";
	if (sizes && sizes->is_array() && !sizes->empty())
		last = fmt::format("{} s at {} processes", fixed(sizes->back(), {"seconds"}, 4),
				   text(sizes->back(), {"processes"}));
	std::cout << fmt::format("{}  malleable={}  size={}  root={}  iteration {}\n", text(app, {"id"}),
				 text(app, {"malleable"}), text(app, {"size"}), text(app, {"root_agent"}),
				 last);
	TextTable table({"RANK", "PID", "UNITS", "ACTIVE", "CPU", "BYTES_LOCAL", "BYTES_REMOTE"});
	for (std::size_t c : {0, 1, 2, 4, 5, 6})
		table.alignRight(c);
	const nlohmann::json *processes = field(app, {"processes"});
	if (processes && processes->is_array())
		for (const nlohmann::json &p : *processes)
			table.addRow({text(p, {"rank"}), text(p, {"pid"}), text(p, {"units"}),
				      text(p, {"active"}), fixed(p, {"cpu_share"}, 2),
				      fixed(p, {"bytes_local"}, 0), fixed(p, {"bytes_remote"}, 0)});
	std::cout << table.render();
	const nlohmann::json *command = field(app, {"command"});
	if (command && command->is_object())
		std::cout << fmt::format("  command {}: {} {}{} ({}, {} s ago)\n", text(*command, {"command"}),
					 text(*command, {"op"}), text(*command, {"count"}),
					 command->contains("node") ? " on " + text(*command, {"node"}) : "",
					 text(*command, {"state"}), fixed(*command, {"age"}, 1));
	const nlohmann::json *result = field(app, {"last_result"});
	if (result && result->is_object()) {
		const std::optional<double> bytes = number(*result, {"bytes"});
		std::cout << fmt::format("  last result: command {} {}: {} ({} s{})\n", text(*result, {"command"}),
					 result->value("ok", false) ? "ok" : "failed", text(*result, {"text"}),
					 fixed(*result, {"duration"}, 3),
					 bytes ? ", " + formatBytes(*bytes) + " moved" : "");
	}
}

} // namespace

int appsCommand(const GlobalOptions &options, bool json)
{
	Failure failure;
	std::optional<ListReply> r = requestList(options, "apps", "apps", "id", failure);
	if (!r)
		return report(failure);
	if (json) {
		nlohmann::json out = {{"agent", r->reply["from"]}, {"apps", r->list}};
		std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
		return kExitOk;
	}
	std::cout << fmt::format("agent {}: {} application{}\n", text(r->reply, {"from"}), r->list.size(),
				 r->list.size() == 1 ? "" : "s");
	for (const nlohmann::json &app : r->list)
		printApp(app);
	return kExitOk;
}

} // namespace malleo::cli
