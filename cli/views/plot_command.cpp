// SPDX-License-Identifier: Apache-2.0
// `malleo plot`: an application's iterations per second over time from agents'
// event logs, each reconfiguration a vertical line labelled with what it was
// and why (the papers' throughput figures). The data and a script go to a
// temporary directory; gnuplot draws.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "app_history.h"
#include "views.h"
#include "event_log.h"
#include "gnuplot.h"
#include "reply_fields.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

// A label longer than this would run off a 600-pixel-high image when drawn upright.
constexpr std::size_t kLabelChars = 80;
constexpr const char *kOkColour = "#2060c0";
constexpr const char *kFailedColour = "#d03030";
constexpr const char *kNodeColour = "#909090";

std::optional<std::string> imageKind(const std::string &output)
{
	std::string ext = fs::path(output).extension().string();
	std::transform(ext.begin(), ext.end(), ext.begin(),
		       [](unsigned char c) { return std::tolower(c); });
	if (ext == ".png" || ext == ".svg")
		return ext.substr(1);
	return std::nullopt;
}

std::string label(const HistoryEvent &e)
{
	std::string text = e.why.empty() ? e.what : e.what + ": " + e.why;
	if (text.size() > kLabelChars) {
		std::size_t cut = kLabelChars - 3;
		while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
			--cut; // not inside a UTF-8 character
		text = text.substr(0, cut) + "...";
	}
	return text;
}

std::string terminal(const std::string &kind)
{
	// gnuplot-nox has pngcairo (antialiased); a gnuplot built without cairo still has libgd's
	// png.
	if (kind == "png")
		return "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		       "  set terminal pngcairo size 1200,600 noenhanced font 'sans,10'\n"
		       "} else {\n"
		       "  set terminal png size 1200,600 noenhanced\n"
		       "}\n";
	return "set terminal svg size 1200,600 dynamic noenhanced font 'sans,10' background "
	       "'#ffffff'\n";
}

std::string script(const AppHistory &history, const std::string &kind, const std::string &output,
		   const std::string &data)
{
	double end = history.progress.back().time;
	for (const HistoryEvent &e : history.events)
		end = std::max(end, e.time);
	std::string s = terminal(kind);
	s += fmt::format("set output {}\n", malleo::plot::gnuplotString(output));
	s += fmt::format("set title {}\n", malleo::plot::gnuplotString(history.app));
	long most = 1;
	for (const ProgressPoint &p : history.progress)
		most = std::max(most, p.processes);
	s += "set xlabel 'time (s)'\nset ylabel 'iterations per second'\nset y2label 'active "
	     "processes'\n"
	     "set ytics nomirror\nset yrange [0:*]\nset grid ytics\nset key outside top center "
	     "horizontal\n";
	// Whole processes: a tic per process while they fit, and headroom so that the line is not
	// the frame.
	s += fmt::format("set y2range [0:{}]\nset y2tics {}\n", most + 1,
			 std::max(1L, (most + 1) / 10));
	s += fmt::format("set xrange [0:{:.3f}]\n", std::max(end * 1.02, 1.0));
	bool failed = false, nodes = false;
	int n = 0;
	for (const HistoryEvent &e : history.events) {
		++n;
		// The nodes' joins, drains and leaves, thin and grey under the reconfigurations: what the
		// timeline tells of the cluster is in the picture too.
		const char *colour = !e.reconfiguration ? kNodeColour : e.ok ? kOkColour : kFailedColour;
		failed |= e.reconfiguration && !e.ok;
		nodes |= !e.reconfiguration;
		s += fmt::format("set arrow {} from {:.3f}, graph 0 to {:.3f}, graph 1 nohead lw "
				 "{} lc rgb '{}'{}\n",
				 n, e.time, e.time, e.reconfiguration ? "1.5" : "1", colour,
				 !e.reconfiguration ? " dt 3" : e.ok ? "" : " dt 2");
		s += fmt::format("set label {} {} at {:.3f}, graph 0.98 rotate by 90 right offset "
				 "character -1.6, 0 "
				 "textcolor rgb '{}' font ',8'\n",
				 n, malleo::plot::gnuplotString(label(e)), e.time, colour);
	}
	s += fmt::format(
	    "plot {0} using 1:2 with fsteps lw 2 lc rgb '#000000' title 'iterations per second', "
	    "{0} using 1:3 axes x1y2 with fsteps lw 1.5 dt 3 lc rgb '#30a030' title 'active "
	    "processes'",
	    malleo::plot::gnuplotString(data));
	if (n > 0 && std::any_of(history.events.begin(), history.events.end(),
				 [](const HistoryEvent &e) { return e.reconfiguration; }))
		s += fmt::format(", NaN with lines lw 1.5 lc rgb '{}' title 'reconfiguration'",
				 kOkColour);
	if (nodes)
		s += fmt::format(", NaN with lines lw 1 dt 3 lc rgb '{}' title 'node joined, drained or left'",
				 kNodeColour);
	if (failed)
		s += fmt::format(
		    ", NaN with lines lw 1.5 dt 2 lc rgb '{}' title 'failed or refused'",
		    kFailedColour);
	return s + "\n";
}

// Writes the data and script to a fresh temporary directory, runs gnuplot, and removes the
// directory.
std::optional<Failure> draw(const std::string &gnuplot, const AppHistory &history,
			    const std::string &kind, const std::string &output)
{
	const char *tmp = std::getenv("TMPDIR");
	std::string pattern =
	    (fs::path(tmp && *tmp ? tmp : "/tmp") / "malleo-plot-XXXXXX").string();
	if (!mkdtemp(pattern.data()))
		return Failure{kExitFailed,
			       fmt::format("cannot create a temporary directory {}: {}", pattern,
					   std::strerror(errno))};
	const fs::path dir = pattern;
	const std::string data = (dir / "progress.dat").string(), plot = (dir / "plot.gp").string();
	std::optional<Failure> failure;
	{
		std::ofstream d(data), p(plot);
		d << "# time (s), iterations per second, active processes\n";
		for (const ProgressPoint &point : history.progress)
			d << fmt::format("{:.6f} {:.6g} {}\n", point.time, point.rate,
					 point.processes);
		p << script(history, kind, output, data);
		if (!d.flush() || !p.flush())
			failure =
			    Failure{kExitFailed, fmt::format("cannot write in {}: {}", dir.string(),
							     std::strerror(errno))};
	}
	if (!failure)
		if (std::optional<std::string> e =
			malleo::plot::runGnuplot(gnuplot, plot, (dir / "gnuplot.log").string()))
			failure = Failure{kExitFailed, *e};
	std::error_code ec;
	if (!failure && (!fs::exists(output, ec) || fs::file_size(output, ec) == 0))
		failure =
		    Failure{kExitFailed, fmt::format("gnuplot ended well but wrote no {}", output)};
	fs::remove_all(dir, ec);
	return failure;
}

} // namespace

int plotCommand(const PlotOptions &plot)
{
	std::optional<std::string> kind = imageKind(plot.output);
	if (!kind)
		return report(
		    {kExitBadInput,
		     fmt::format("-o {}: the image must be FILE.png or FILE.svg", plot.output)});
	Failure failure;
	std::optional<std::string> gnuplot = malleo::plot::findGnuplot(failure.line);
	if (!gnuplot)
		return report(failure);
	std::optional<EventLog> log = readEventLogs(plot.files, failure);
	if (!log)
		return report(failure);
	if (!plot.allSessions)
		latestSession(*log);
	std::string note;
	const std::string app = chooseApp(*log, plot.app, note, failure);
	if (!failure.line.empty())
		return report(failure);
	// Only once the input is known good enough to show: a refusal stays one line.
	if (std::string warning = skippedWarning(*log); !warning.empty())
		report({kExitOk, warning});
	const AppHistory history = appHistory(*log, app);
	if (history.progress.empty())
		return report({kExitFailed, app.empty() || !plot.app
						? "no application's progress in the files (no "
						  "app_progress event): nothing to plot"
						: fmt::format("--app {}: no app_progress event of "
							      "it in the files: nothing to plot",
							      app)});
	if (!note.empty())
		report({kExitOk, note});
	if (std::string sessions = sessionNote(*log); !sessions.empty())
		report({kExitOk, sessions});
	if (std::optional<Failure> f = draw(*gnuplot, history, *kind, plot.output))
		return report(*f);

	std::size_t reconfigurations = 0, failed = 0;
	nlohmann::json marks = nlohmann::json::array(), nodeMarks = nlohmann::json::array();
	for (const HistoryEvent &e : history.events)
		if (!e.reconfiguration)
			nodeMarks.push_back({{"time", std::round(e.time * 1e6) / 1e6}, {"event", e.what}, {"why", e.why}});
		else {
			++reconfigurations;
			failed += !e.ok;
			marks.push_back({{"time", std::round(e.time * 1e6) / 1e6},
					 {"event", e.what},
					 {"why", e.why},
					 {"ok", e.ok}});
		}
	const double seconds = history.progress.back().time - history.progress.front().time;
	if (plot.json) {
		nlohmann::json out = {{"output", plot.output},
				      {"format", *kind},
				      {"app", app},
				      {"progress_reports", history.progress.size()},
				      {"seconds", seconds},
				      {"reconfigurations", std::move(marks)},
				      {"nodes", std::move(nodeMarks)}};
		std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
			  << '\n';
	} else {
		std::cout << fmt::format(
		    "wrote {}: {}, {} progress report{} over {:.1f} s, {} reconfiguration{}{}, {} node event{}\n",
		    plot.output, shownText(app), history.progress.size(),
		    history.progress.size() == 1 ? "" : "s", seconds, reconfigurations,
		    reconfigurations == 1 ? "" : "s",
		    failed ? fmt::format(" ({} failed or refused)", failed) : "", nodeMarks.size(),
		    nodeMarks.size() == 1 ? "" : "s");
	}
	return kExitOk;
}

} // namespace malleo::cli
