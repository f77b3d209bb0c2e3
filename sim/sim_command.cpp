// SPDX-License-Identifier: Apache-2.0
#include "sim_command.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "gnuplot.h"
#include "replay.h"
#include "run_plot.h"
#include "run_report.h"
#include "simulation.h"

namespace malleo::sim {

namespace {

namespace fs = std::filesystem;

struct SimOptions {
	int64_t nodes = 0;
	std::string scenario;
	std::string decision;
	std::string protocol;
	uint64_t seed = 1;
	bool json = false;
	std::string out;
	bool plot = false;	  // --plot given
	std::string plotFile; // --plot FILE: gnuplot's image; without FILE: the SVGs in --out
	bool events = false;
	std::vector<std::string> modulePath;
	std::string baselines; // empty: the scenario's list
	std::string replay;
};

// The runs of a set: the policy under test, then the baselines.
std::vector<RunOptions> runsFor(const SimOptions &o, const std::vector<std::string> &baselines)
{
	RunOptions base;
	base.protocol = o.protocol;
	base.seed = o.seed;
	base.nodes = o.nodes;
	base.modulePath = o.modulePath;
	std::vector<RunOptions> runs;
	RunOptions main = base;
	main.policy = o.decision;
	main.decision = o.decision;
	main.execution = o.decision == "swap" ? Execution::Swap : Execution::Full;
	runs.push_back(main);
	for (const std::string &b : baselines) {
		RunOptions r = base;
		r.policy = b;
		if (b == "static") {
			r.decision = "none";
			r.execution = Execution::Static;
		} else if (b == "migration") {
			r.decision = o.decision;
			r.execution = Execution::Migration;
		} else if (b == "central") {
			r.decision = "none";
			r.execution = Execution::Central;
		} else {
			r.decision = "swap";
			r.execution = Execution::Swap;
		}
		runs.push_back(r);
	}
	return runs;
}

std::string writeFile(const fs::path &path, const std::string &text)
{
	std::ofstream f(path, std::ios::binary);
	f << text;
	f.close();
	return f ? std::string() : fmt::format("cannot write '{}'", path.string());
}

int fail(const std::string &line, int code)
{
	std::cerr << "malleo sim: " << line << '\n';
	return code;
}

// Why the command stops early, and its exit code.
struct Stop {
	std::string line;
	int code;
};

// The command's options into `o`; the --plot option, whose FILE is optional.
CLI::Option *addOptions(CLI::App &app, SimOptions &o)
{
	app.add_option("--nodes", o.nodes, "nodes at start (default: the scenario's)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
	app.add_option("--scenario", o.scenario, "scenario file (JSON, see sim/README.md)");
	app.add_option("--decision", o.decision, "decision module of the agents: a built-in name or malleo-decision-NAME.so on the module path");
	app.add_option("--protocol", o.protocol, "protocol module (default: the scenario's, else p2p)");
	app.add_option("--seed", o.seed, "seed of every random draw (default 1)");
	app.add_flag("--json", o.json, "print the summary as JSON instead of a table");
	app.add_option("--out", o.out, "directory for <policy>.csv, summary.json and summary.txt (created)");
	CLI::Option *plot = app.add_option("--plot", o.plotFile,
					   "FILE.png or FILE.svg: iteration time over simulated time per policy, "
					   "reconfigurations marked, drawn by gnuplot (its data in FILE's stem .dat, "
					   "the script in .gp); without FILE: iterations.svg and processes.svg in --out")
				 ->expected(0, 1);
	app.add_flag("--events", o.events, "also write <policy>.events.jsonl in --out: every agent's events, as "
					   "malleod's events.jsonl, each with the simulated time (sim_time)");
	app.add_option("--module-path", o.modulePath, "directory searched for shared-object modules (repeatable)");
	app.add_option("--baselines", o.baselines, "comma-separated baselines to run besides the decision module: static, migration, central, swap, or none (default: the scenario's, else all four)");
	app.add_option("--replay", o.replay, "replay a timed message sequence on one node and print what it sends and decides (see sim/README.md); other options are ignored but --module-path");
	return plot;
}

// The options a simulation needs, and with --plot FILE the image's kind and gnuplot's path: found before the runs,
// so that a missing gnuplot does not cost a long simulation.
std::optional<Stop> checkOptions(const SimOptions &o, std::string &plotKind, std::string &gnuplot)
{
	if (o.scenario.empty())
		return Stop{"--scenario FILE is required (see --help)", 2};
	if (o.decision.empty())
		return Stop{"--decision NAME is required (see --help)", 2};
	if (o.plot && o.plotFile.empty() && o.out.empty())
		return Stop{"--plot without FILE writes SVGs: give --out DIR, or --plot FILE.png|FILE.svg", 2};
	if (o.events && o.out.empty())
		return Stop{"--events writes files: give --out DIR", 2};
	if (o.plotFile.empty())
		return std::nullopt;
	std::string ext = fs::path(o.plotFile).extension().string();
	std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
	if (ext != ".png" && ext != ".svg")
		return Stop{fmt::format("--plot {}: the image must be FILE.png or FILE.svg", o.plotFile), 2};
	plotKind = ext.substr(1);
	std::string missing;
	std::optional<std::string> found = plot::findGnuplot(missing);
	if (!found)
		return Stop{missing, 1};
	gnuplot = *found;
	return std::nullopt;
}

// The baselines to run: --baselines, else the scenario's.
std::optional<Stop> baselinesOf(const SimOptions &o, const Scenario &scenario, std::vector<std::string> &baselines)
{
	baselines = scenario.baselines;
	if (o.baselines.empty())
		return std::nullopt;
	baselines.clear();
	std::stringstream list(o.baselines);
	for (std::string b; std::getline(list, b, ',');) {
		if (b == "none")
			continue;
		if (b != "static" && b != "migration" && b != "central" && b != "swap")
			return Stop{fmt::format("--baselines: unknown baseline '{}' (static, migration, "
						"central, swap or none)",
						b),
				    2};
		baselines.push_back(b);
	}
	return std::nullopt;
}

// Each run of the set, its result into `set` and, with --events, its agents' events into `eventLogs`.
std::optional<Stop> runAll(const SimOptions &o, const Scenario &scenario, const std::vector<RunOptions> &runs,
			   RunSet &set, std::vector<std::string> &eventLogs)
{
	// A long run shows where it is on a terminal, one line redrawn in place as `top` does; a pipe or a file gets
	// only the results.
	const bool terminal = isatty(STDERR_FILENO);
	for (std::size_t i = 0; i < runs.size(); ++i) {
		const RunOptions &r = runs[i];
		Simulation sim;
		if (std::string e = sim.setup(scenario, r); !e.empty())
			return Stop{fmt::format("{}: {}", r.policy, e), 2};
		std::string events;
		if (o.events)
			sim.onEvent = [&](uint32_t, const nlohmann::json &e) {
				nlohmann::json line = e;
				line["sim_time"] = sim.clock().now();
				events += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
			};
		auto shown = std::chrono::steady_clock::time_point{};
		if (terminal)
			sim.onProgress = [&, i](double now, double until) {
				const auto t = std::chrono::steady_clock::now();
				if (t - shown < std::chrono::milliseconds(250))
					return;
				shown = t;
				std::cerr << fmt::format("\rmalleo sim: run {} of {} ({}): {:.1f} of {:.1f} s simulated "
							 "({:.0f} %)\x1b[K",
							 i + 1, runs.size(), r.policy, now, until,
							 until > 0 ? 100 * now / until : 100.0)
					  << std::flush;
			};
		set.runs.push_back(sim.run());
		if (terminal)
			std::cerr << "\r\x1b[K" << std::flush;
		if (!sim.error().empty())
			return Stop{fmt::format("{}: {}", r.policy, sim.error()), 1};
		eventLogs.push_back(std::move(events));
	}
	return std::nullopt;
}

// The files of --out: each run's iterations (and events), the summary, and the SVG plots of --plot without FILE.
std::optional<Stop> writeOut(const SimOptions &o, const RunSet &set, const std::vector<std::string> &eventLogs,
			     const nlohmann::json &summary, const std::string &table)
{
	std::error_code ec;
	fs::create_directories(o.out, ec);
	if (ec)
		return Stop{fmt::format("--out '{}': {}", o.out, ec.message()), 1};
	std::set<std::string> written;
	for (size_t i = 0; i < set.runs.size(); ++i) {
		const RunResult &r = set.runs[i];
		// Two runs of one label (swap as policy and baseline) keep both files.
		std::string name = r.policy;
		for (int k = 2; written.count(name); ++k)
			name = fmt::format("{}-{}", r.policy, k);
		written.insert(name);
		if (std::string e = writeFile(fs::path(o.out) / (name + ".csv"), iterationsCsv(r)); !e.empty())
			return Stop{e, 1};
		if (o.events)
			if (std::string e = writeFile(fs::path(o.out) / (name + ".events.jsonl"), eventLogs[i]);
			    !e.empty())
				return Stop{e, 1};
	}
	for (auto [file, text] : {std::pair{"summary.json", summary.dump(2) + "\n"},
				  std::pair{"summary.txt", table}})
		if (std::string e = writeFile(fs::path(o.out) / file, text); !e.empty())
			return Stop{e, 1};
	if (o.plot && o.plotFile.empty())
		for (auto [file, text] : {std::pair{"iterations.svg", iterationPlotSvg(set)},
					  std::pair{"processes.svg", processPlotSvg(set)}})
			if (std::string e = writeFile(fs::path(o.out) / file, text); !e.empty())
				return Stop{e, 1};
	return std::nullopt;
}

// --plot FILE: gnuplot draws the image from the data and the script, which stay next to it: the data is what a test
// (and a reader) can check.
std::optional<Stop> drawPlot(const SimOptions &o, const RunSet &set, const std::string &plotKind,
			     const std::string &gnuplot)
{
	fs::path data = o.plotFile, script = o.plotFile;
	data.replace_extension(".dat");
	script.replace_extension(".gp");
	if (std::string e = writeFile(data, plotData(set)); !e.empty())
		return Stop{e, 1};
	if (std::string e = writeFile(script, plotScript(set, plotKind, o.plotFile, data.string())); !e.empty())
		return Stop{e, 1};
	fs::path log = o.plotFile;
	log.replace_extension(".gnuplot.log");
	if (std::optional<std::string> e = plot::runGnuplot(gnuplot, script.string(), log.string()))
		return Stop{*e, 1};
	std::error_code ec;
	fs::remove(log, ec);
	return std::nullopt;
}

} // namespace

int simCommand(int argc, char **argv)
{
	SimOptions o;
	CLI::App app{"Runs the agent's real core and modules over a simulated clock, network, nodes and\n"
		     "application, reproducibly from a seed, and compares the decision module with\n"
		     "baselines (static, migration only, a central scheduler, swapping).\n"
		     "The scenario format is documented in sim/README.md.",
		     argc > 0 ? argv[0] : "malleo-sim"};
	CLI::Option *plot = addOptions(app, o);
	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		std::cout << app.help();
		return 0;
	} catch (const CLI::ParseError &e) {
		return fail(e.what(), 2);
	}

	o.plot = plot->count() > 0;
	if (!o.replay.empty()) {
		std::string e = replayFile(o.replay, o.modulePath, std::cout);
		return e.empty() ? 0 : fail(e, 2);
	}
	std::string plotKind, gnuplot;
	if (std::optional<Stop> stop = checkOptions(o, plotKind, gnuplot))
		return fail(stop->line, stop->code);
	Scenario scenario;
	if (std::string e = loadScenarioFile(o.scenario, scenario); !e.empty())
		return fail(e, 2);
	std::vector<std::string> baselines;
	if (std::optional<Stop> stop = baselinesOf(o, scenario, baselines))
		return fail(stop->line, stop->code);

	RunSet set;
	set.scenario = scenario.name.empty() ? fs::path(o.scenario).stem().string() : scenario.name;
	set.seed = o.seed;
	set.nodes = o.nodes ? o.nodes : scenario.nodes;
	const auto wallStart = std::chrono::steady_clock::now();
	std::vector<std::string> eventLogs; // per run, with --events
	if (std::optional<Stop> stop = runAll(o, scenario, runsFor(o, baselines), set, eventLogs))
		return fail(stop->line, stop->code);
	const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();

	const nlohmann::json summary = summaryJson(set);
	const std::string table = summaryTable(set);
	if (!o.out.empty())
		if (std::optional<Stop> stop = writeOut(o, set, eventLogs, summary, table))
			return fail(stop->line, stop->code);
	if (!o.plotFile.empty())
		if (std::optional<Stop> stop = drawPlot(o, set, plotKind, gnuplot))
			return fail(stop->line, stop->code);
	if (o.json)
		std::cout << summary.dump(2) << '\n';
	else
		std::cout << table;
	// Wall time goes to stderr only: the outputs must not depend on it.
	std::cerr << fmt::format("malleo sim: {} run(s) in {:.2f} s of wall time\n", set.runs.size(), wall);
	return 0;
}

} // namespace malleo::sim
