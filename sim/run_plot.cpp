// SPDX-License-Identifier: Apache-2.0
#include "run_plot.h"

#include <algorithm>

#include <fmt/format.h>

#include "gnuplot.h"

namespace malleo::sim {

namespace {

// Each kind its point shape, the same on every policy's curve (the policy is the colour).
struct KindStyle {
	const char *kind;
	int pointType;
};
constexpr KindStyle kKinds[] = {{"split", 9}, {"merge", 11}, {"migrate", 7}, {"drain", 5},
				{"evacuate", 3}, {"resize", 13}};
constexpr const char *kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
// The decision module's run solid, each baseline dashed its own way: baselines that do nothing run on the same
// level (static and migration only at the same iteration time), and a dashed line lets the one beneath show.
constexpr const char *kDashes[] = {"solid", "(12,6)", "(4,4)", "(12,4,2,4)", "(2,4)", "(20,4,4,4)"};

std::string field(const std::string &s)
{
	return s.empty() ? "-" : s; // node ids have no blanks
}

} // namespace

std::string plotData(const RunSet &set)
{
	std::string d;
	for (const RunResult &r : set.runs) {
		d += fmt::format("# {} iterations: start (s), iteration time (s), iteration, active processes\n", r.policy);
		for (const IterationRecord &i : r.iterations)
			d += fmt::format("{:.6f} {:.6f} {} {}\n", i.start, i.seconds, i.iteration, i.processes);
		// gnuplot does not count a block without data among the indices: an empty one gets a row of NaN.
		if (r.iterations.empty())
			d += "NaN NaN -1 0\n";
		d += fmt::format("\n\n# {} reconfigurations: time (s), iteration time there (s), iteration, kind, "
				 "count, from, to\n",
				 r.policy);
		for (const ReconfigurationMark &m : r.marks) {
			// On the curve: the time of the iteration the mark falls in.
			double y = 0.0;
			for (const IterationRecord &i : r.iterations)
				if (i.start <= m.at + 1e-9)
					y = i.seconds;
			d += fmt::format("{:.6f} {:.6f} {} {} {} {} {}\n", m.at, y, m.iteration, m.kind, m.count,
					 field(m.from), field(m.to));
		}
		if (r.marks.empty())
			d += "NaN NaN -1 none 0 - -\n";
		d += "\n\n";
	}
	return d;
}

std::string plotScript(const RunSet &set, const std::string &kind, const std::string &output,
		       const std::string &data)
{
	std::string s = kind == "png" ? "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
					"  set terminal pngcairo size 1200,600 noenhanced font 'sans,10'\n"
					"} else {\n"
					"  set terminal png size 1200,600 noenhanced\n"
					"}\n"
				      : "set terminal svg size 1200,600 dynamic noenhanced font 'sans,10' background "
					"'#ffffff'\n";
	s += fmt::format("set output {}\n", plot::gnuplotString(output));
	s += fmt::format("set title {}\n",
			 plot::gnuplotString(fmt::format("{}, seed {}: iteration time, reconfigurations marked",
							set.scenario, set.seed)));
	s += "set xlabel 'simulated time (s)'\nset ylabel 'iteration time (s)'\nset yrange [0:*]\nset grid ytics\n"
	     "set key outside right top vertical\n";
	const std::string file = plot::gnuplotString(data);
	std::vector<std::string> plots;
	for (size_t k = 0; k < set.runs.size(); ++k)
		plots.push_back(fmt::format("{} index {} using 1:2 with steps lw 2 dt {} lc rgb '{}' title {}", file,
					    2 * k, kDashes[k % 6], kColours[k % 6], plot::gnuplotString(set.runs[k].policy)));
	for (size_t k = 0; k < set.runs.size(); ++k)
		for (const KindStyle &style : kKinds) {
			const bool any = std::any_of(set.runs[k].marks.begin(), set.runs[k].marks.end(),
						     [&](const ReconfigurationMark &m) { return m.kind == style.kind; });
			if (!any)
				continue;
			plots.push_back(fmt::format("{} index {} using 1:(strcol(4) eq '{}' ? $2 : NaN) with points "
						    "pt {} ps 1.5 lc rgb '{}' notitle",
						    file, 2 * k + 1, style.kind, style.pointType, kColours[k % 6]));
		}
	// The legend of the shapes, once, in black.
	for (const KindStyle &style : kKinds) {
		const bool any = std::any_of(set.runs.begin(), set.runs.end(), [&](const RunResult &r) {
			return std::any_of(r.marks.begin(), r.marks.end(),
					   [&](const ReconfigurationMark &m) { return m.kind == style.kind; });
		});
		if (any)
			plots.push_back(fmt::format("NaN with points pt {} ps 1.5 lc rgb '#000000' title '{}'",
						    style.pointType, style.kind));
	}
	s += "plot ";
	for (size_t i = 0; i < plots.size(); ++i)
		s += (i ? ", \\\n     " : "") + plots[i];
	return s + "\n";
}

} // namespace malleo::sim
