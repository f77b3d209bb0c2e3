// SPDX-License-Identifier: Apache-2.0
#include "run_report.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace malleo::sim {

namespace {

nlohmann::json numberOrNull(double v)
{
	return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::string cell(double v, const char *format = "{:.3f}")
{
	return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : "-";
}

std::string kinds(const std::map<std::string, int64_t> &counts)
{
	std::string s;
	for (const auto &[kind, n] : counts)
		s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, kind);
	return s.empty() ? "none" : s;
}

// A line plot: x and y per series, axes from the data.
std::string linePlot(const std::string &title, const std::string &xLabel, const std::string &yLabel,
		     const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> &series)
{
	const double width = 720, height = 420, left = 70, right = 160, top = 40, bottom = 50;
	double xMax = 1, yMax = 0;
	for (const auto &[name, points] : series)
		for (const auto &[x, y] : points) {
			xMax = std::max(xMax, x);
			yMax = std::max(yMax, y);
		}
	yMax = yMax > 0 ? yMax * 1.1 : 1;
	const char *colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
	auto px = [&](double x) { return left + x / xMax * (width - left - right); };
	auto py = [&](double y) { return height - bottom - y / yMax * (height - top - bottom); };
	std::string svg = fmt::format(
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
		"<text x=\"{}\" y=\"24\" font-size=\"15\">{}</text>\n",
		width, height, left, title);
	svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n"
			   "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{3}\" stroke=\"black\"/>\n",
			   left, height - bottom, width - right, top);
	for (int k = 0; k <= 5; ++k) {
		double x = xMax * k / 5, y = yMax * k / 5;
		svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.4g}</text>\n", px(x),
				   height - bottom + 16, x);
		svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.4g}</text>\n", left - 6,
				   py(y) + 4, y);
	}
	svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
			   (left + width - right) / 2, height - 12, xLabel);
	svg += fmt::format("<text x=\"16\" y=\"{:.1f}\" transform=\"rotate(-90 16 {:.1f})\" "
			   "text-anchor=\"middle\">{}</text>\n",
			   (top + height - bottom) / 2, (top + height - bottom) / 2, yLabel);
	for (size_t i = 0; i < series.size(); ++i) {
		const char *colour = colours[i % 6];
		std::string points;
		for (const auto &[x, y] : series[i].second)
			points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
		svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
				   colour, points);
		svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n", width - right + 10,
				   top + 16 * (i + 1), colour, series[i].first);
	}
	return svg + "</svg>\n";
}

} // namespace

double median(std::vector<double> values)
{
	if (values.empty())
		return std::numeric_limits<double>::quiet_NaN();
	std::sort(values.begin(), values.end());
	size_t n = values.size();
	return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string iterationsCsv(const RunResult &run)
{
	std::string csv = "iteration,start,seconds,reconfiguration_seconds,imbalance,processes,"
			  "nodes_up,nodes_used,max_per_node,reconfigurations,messages,placement\n";
	for (const IterationRecord &r : run.iterations)
		csv += fmt::format("{},{:.6f},{:.6f},{:.6f},{:.6f},{},{},{},{},{},{},{}\n", r.iteration,
				   r.start, r.seconds, r.reconfiguration, r.imbalance, r.processes, r.nodesUp,
				   r.nodesUsed, r.maxPerNode, r.reconfigurations, r.messages, r.placement);
	return csv;
}

nlohmann::json summaryJson(const RunSet &set)
{
	nlohmann::json runs = nlohmann::json::array();
	for (const RunResult &r : set.runs) {
		std::vector<double> hops(r.replyHops.begin(), r.replyHops.end());
		runs.push_back({
			{"policy", r.policy},
			{"decision", r.decision},
			{"protocol", r.protocol},
			{"iterations", r.iterations.size()},
			{"app_seconds", r.appEnd >= 0 ? nlohmann::json(r.appEnd - r.appStart) : nlohmann::json(nullptr)},
			{"mean_iteration_seconds", r.meanIteration()},
			{"reconfigurations", r.reconfigurations},
			{"refused", r.refused},
			{"messages", r.transport.sent},
			{"bytes", r.transport.bytes},
			{"lost", r.transport.lost},
			{"undeliverable", r.transport.undeliverable},
			{"messages_per_agent_second", r.messagesPerAgentSecond()},
			{"nodes", r.nodesCreated},
			{"late_joins", r.lateJoins},
			{"join_to_reply_median", numberOrNull(median(r.joinToReply))},
			{"join_replies", r.joinToReply.size()},
			{"reply_hops_median", numberOrNull(median(hops))},
			{"join_to_work_median", numberOrNull(median(r.joinToWork))},
			{"simulated_seconds", r.simulated},
			{"events", r.events},
			{"actions", [&] {
				 nlohmann::json a = nlohmann::json::object();
				 for (const auto &[name, n] : r.counters)
					 if (name.rfind("actions.", 0) == 0)
						 a[name.substr(8)] = n;
				 return a;
			 }()},
		});
	}
	return {{"scenario", set.scenario}, {"seed", set.seed}, {"nodes", set.nodes}, {"runs", runs}};
}

std::string summaryTable(const RunSet &set)
{
	std::string s = fmt::format("scenario {}, {} nodes, seed {}\n", set.scenario, set.nodes, set.seed);
	s += fmt::format("{:<22} {:>10} {:>9} {:>6} {:>10} {:>9} {:>10} {:>9}  {}\n", "policy", "app s", "mean it",
			 "iters", "messages", "msg/ag/s", "join→reply", "join→work", "reconfigurations");
	for (const RunResult &r : set.runs) {
		std::string label = r.policy == r.decision ? r.policy : fmt::format("{} ({})", r.policy, r.decision);
		s += fmt::format("{:<22} {:>10} {:>9} {:>6} {:>10} {:>9} {:>10} {:>9}  {}\n", label,
				 r.appEnd >= 0 ? cell(r.appEnd - r.appStart, "{:.2f}") : "unfinished",
				 cell(r.meanIteration()), r.iterations.size(), r.transport.sent,
				 cell(r.messagesPerAgentSecond(), "{:.2f}"), cell(median(r.joinToReply), "{:.2f}"),
				 cell(median(r.joinToWork), "{:.2f}"), kinds(r.reconfigurations));
	}
	return s;
}

std::string iterationPlotSvg(const RunSet &set)
{
	std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> series;
	for (const RunResult &r : set.runs) {
		std::vector<std::pair<double, double>> points;
		for (const IterationRecord &i : r.iterations)
			points.push_back({static_cast<double>(i.iteration), i.seconds});
		series.push_back({r.policy, points});
	}
	return linePlot(set.scenario + ": iteration time", "iteration", "seconds", series);
}

std::string processPlotSvg(const RunSet &set)
{
	std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> series;
	for (const RunResult &r : set.runs) {
		std::vector<std::pair<double, double>> points;
		for (const IterationRecord &i : r.iterations)
			points.push_back({static_cast<double>(i.iteration), static_cast<double>(i.processes)});
		series.push_back({r.policy, points});
	}
	return linePlot(set.scenario + ": active processes", "iteration", "processes", series);
}

} // namespace malleo::sim
