// SPDX-License-Identifier: Apache-2.0
#include "top_frame.h"

#include <array>
#include <sstream>

#include <fmt/format.h>

#include "reply_fields.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

// The work-stealing counters shown, as (column, counter). YES counts the
// requests this node said yes to: with the default module (loaddiff) that is
// "busier than the asker by 0.25 UPW", which holds on an idle cluster whenever
// something else loads a node's cores, and moves nothing by itself; RECONF
// counts what did move something: the reconfigurations this node asked for.
constexpr std::array<std::pair<const char *, const char *>, 6> kWrmColumns = {{
	{"ASK", "wrm.sent"},
	{"FWD", "wrm.forwarded"},
	{"YES", "decisions.wrm_answer"},
	{"EXP", "wrm.ttl_expired"},
	{"RETRY", "wrm.retries"},
	{"RECONF", "requests.sent"},
}};

uint64_t counter(const nlohmann::json &status, const char *name)
{
	const nlohmann::json *counters = field(status, {"counters"});
	if (!counters || !counters->is_object())
		return 0;
	auto it = counters->find(name);
	return it != counters->end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

uint64_t rejectedTotal(const nlohmann::json &status)
{
	const nlohmann::json *counters = field(status, {"counters"});
	uint64_t total = 0;
	if (counters && counters->is_object())
		for (auto it = counters->begin(); it != counters->end(); ++it)
			if (it.key().rfind("rejected.", 0) == 0 && it->is_number_unsigned())
				total += it->get<uint64_t>();
	return total;
}

std::vector<std::string> lines(const std::string &text)
{
	std::vector<std::string> out;
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);)
		out.push_back(line);
	return out;
}

} // namespace

std::vector<std::string> nodeTable(const std::vector<NodeSnapshot> &nodes)
{
	std::vector<std::string> header = {"NODE", "PEERS", "PW", "APW", "UPW"};
	for (const auto &[column, name] : kWrmColumns)
		header.push_back(column);
	header.insert(header.end(), {"REJ", "STATE"});
	TextTable table(header);
	for (std::size_t c = 1; c + 1 < header.size(); ++c)
		table.alignRight(c);

	std::array<uint64_t, kWrmColumns.size() + 1> totals = {};
	std::size_t answering = 0;
	for (const NodeSnapshot &node : nodes) {
		if (!node.status) {
			std::vector<std::string> row(header.size() - 1, "-");
			row.front() = node.name;
			row.push_back(node.problem.empty() ? "no answer yet" : node.problem);
			table.addRow(std::move(row));
			continue;
		}
		const nlohmann::json &s = *node.status;
		++answering;
		std::vector<std::string> row = {text(s, {"agent", "id"}),
						fmt::format("{}/{}", text(s, {"peers", "alive"}),
							    text(s, {"peers", "in_view"})),
						fixed(s, {"profile", "pw"}, 2), fixed(s, {"profile", "apw"}, 2),
						fixed(s, {"profile", "upw"}, 2)};
		for (std::size_t i = 0; i < kWrmColumns.size(); ++i) {
			uint64_t v = counter(s, kWrmColumns[i].second);
			totals[i] += v;
			row.push_back(std::to_string(v));
		}
		uint64_t rejected = rejectedTotal(s);
		totals.back() += rejected;
		row.push_back(std::to_string(rejected));
		const nlohmann::json *outstanding = field(s, {"wrm", "outstanding"});
		row.push_back(outstanding && outstanding->is_boolean() && outstanding->get<bool>() ? "stealing"
												 : "ok");
		table.addRow(std::move(row));
	}
	if (nodes.size() > 1) {
		std::vector<std::string> row = {"TOTAL", fmt::format("{} up", answering), "", "", ""};
		for (uint64_t v : totals)
			row.push_back(std::to_string(v));
		table.addRow(std::move(row));
	}
	return lines(table.render());
}

std::vector<std::string> tableLegend()
{
	return {"PW power  APW free CPU share  UPW used CPU share  ASK work requests it sent  FWD passed on  "
		"YES answered yes",
		"EXP TTL ran out here  RETRY asked again  RECONF reconfigurations it asked for  REJ messages rejected"};
}

nlohmann::json toJson(const NodeSnapshot &node)
{
	nlohmann::json j = {{"name", node.name}, {"endpoint", node.endpoint}};
	j["status"] = node.status ? *node.status : nlohmann::json();
	if (!node.problem.empty())
		j["problem"] = node.problem;
	return j;
}

} // namespace malleo::cli
