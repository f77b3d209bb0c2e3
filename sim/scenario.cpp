// SPDX-License-Identifier: Apache-2.0
#include "scenario.h"

#include <fstream>
#include <set>

#include <fmt/format.h>
#include <malleo/config_table.h>

namespace malleo::sim {

namespace {

const std::set<std::string> kBaselines = {"static", "migration", "central", "swap"};

// Takes the lists out of a table, so that ConfigTable reads the scalars and
// still refuses a key nobody asked for.
nlohmann::json takeList(nlohmann::json &table, const char *key, ConfigTable &t)
{
	if (!table.is_object() || !table.contains(key))
		return nlohmann::json::array();
	nlohmann::json list = table[key];
	table.erase(key);
	if (!list.is_array())
		t.fail(key, fmt::format("expected a list, got {}", list.dump()));
	return list;
}

std::string parseTrace(const nlohmann::json &list, const std::string &where,
		       std::vector<LoadStep> &trace)
{
	for (size_t i = 0; i < list.size(); ++i) {
		LoadStep s;
		ConfigTable t(list[i], fmt::format("{}.trace[{}]", where, i));
		t.number("at", s.at, 0, 1e9);
		t.number("load", s.load, 0, 1);
		t.finish();
		if (!t.error().empty())
			return t.error();
		if (!trace.empty() && !(s.at > trace.back().at))
			return fmt::format("scenario key '{}.trace[{}].at': {} is not after the "
					   "previous step's {}",
					   where, i, s.at, trace.back().at);
		trace.push_back(s);
	}
	return {};
}

std::string parseClass(const nlohmann::json &table, const std::string &where, NodeClass &c)
{
	nlohmann::json rest = table;
	ConfigTable t(rest, where);
	nlohmann::json trace = takeList(rest, "trace", t);
	t.string("name", c.name);
	t.number("weight", c.weight, 0, 1e9);
	t.integer("cores", c.cores, 1, 1 << 16);
	t.number("speed", c.speed, 1e-6, 1e6);
	t.number("load", c.load, 0, 1);
	t.finish();
	if (!t.error().empty())
		return t.error();
	return parseTrace(trace, where, c.trace);
}

std::string parseApplication(const nlohmann::json &table, ApplicationModel &a)
{
	ConfigTable t(table, "application");
	t.string("name", a.name);
	t.string("pattern", a.pattern);
	t.integer("processes", a.processes, 0, 1 << 22);
	t.number("processes_per_core", a.processesPerCore, 0.01, 64);
	t.integer("units", a.units, 0, 1 << 24);
	t.number("work_per_unit", a.workPerUnit, 0, 1e6);
	t.number("bytes_per_unit", a.bytesPerUnit, 0, 1e15);
	t.number("boundary_bytes", a.boundaryBytes, 0, 1e12);
	t.number("result_bytes_per_unit", a.resultBytesPerUnit, 0, 1e12);
	t.integer("iterations", a.iterations, 1, 1 << 24);
	t.number("start", a.start, 0, 1e9);
	t.number("spawn_latency", a.spawnLatency, 0, 3600);
	t.number("activation_latency", a.activationLatency, 0, 3600);
	t.number("pool_per_core", a.poolPerCore, 0, 64);
	t.integer("over_allocation", a.overAllocation, 0, 64);
	t.number("report_period", a.reportPeriod, 1, 1e6);
	t.boolean("reports_remaining", a.reportsRemaining);
	t.finish();
	if (t.error().empty() && a.pattern != "neighbour" && a.pattern != "farmer")
		t.fail("pattern", fmt::format("expected \"neighbour\" or \"farmer\", got \"{}\"", a.pattern));
	if (t.error().empty() && a.units && a.processes && a.units < a.processes)
		t.fail("units", "must be at least `processes` (every process holds a unit)");
	return t.error();
}

std::string parseEvent(const nlohmann::json &table, size_t index, const Scenario &s,
		       ScenarioEvent &e)
{
	std::string where = fmt::format("events[{}]", index);
	ConfigTable t(table, where);
	bool haveAt = table.is_object() && table.contains("at");
	bool haveIteration = table.is_object() && table.contains("iteration");
	double at = 0;
	int64_t iteration = 0;
	int64_t join = 0, leave = 0, load = 0;
	t.number("at", at, 0, 1e9);
	t.integer("iteration", iteration, 0, 1 << 24);
	t.integer("join", join, 1, 1 << 22);
	t.integer("leave", leave, 1, 1 << 22);
	t.integer("load_nodes", load, 1, 1 << 22);
	t.number("load", e.load, 0, 1);
	t.string("which", e.which);
	t.string("class", e.nodeClass);
	t.integer("repeat", e.repeat, 1, 1 << 20);
	t.number("every", e.every, 0, 1e9);
	t.finish();
	int kinds = (join > 0) + (leave > 0) + (load > 0);
	if (t.error().empty() && haveAt == haveIteration)
		t.fail("at", "give exactly one of `at` (seconds) and `iteration`");
	if (t.error().empty() && kinds != 1)
		t.fail("join", "give exactly one of `join`, `leave` and `load_nodes` (a node count)");
	if (t.error().empty() && e.which != "first" && e.which != "last" && e.which != "random")
		t.fail("which", fmt::format("expected \"first\", \"last\" or \"random\", got \"{}\"", e.which));
	if (t.error().empty() && e.repeat > 1 && !(e.every > 0))
		t.fail("every", "a repeated event needs `every` > 0 seconds");
	if (t.error().empty() && haveIteration && e.repeat > 1)
		t.fail("repeat", "only events with `at` repeat");
	if (t.error().empty() && !e.nodeClass.empty()) {
		bool known = false;
		for (const NodeClass &c : s.classes)
			known |= c.name == e.nodeClass;
		if (!known)
			t.fail("class", fmt::format("no node class is named \"{}\"", e.nodeClass));
	}
	if (!t.error().empty())
		return t.error();
	if (haveAt)
		e.at = at;
	else
		e.iteration = iteration;
	e.kind = join ? "join" : leave ? "leave" : "load";
	e.count = join ? join : leave ? leave : load;
	return {};
}

} // namespace

std::string parseScenario(const nlohmann::json &doc, Scenario &scenario)
{
	if (!doc.is_object())
		return "scenario: the document must be a JSON object";
	Scenario s;
	nlohmann::json rest = doc;
	ConfigTable t(rest, "scenario");
	nlohmann::json classes = takeList(rest, "classes", t);
	nlohmann::json events = takeList(rest, "events", t);
	nlohmann::json agent = nlohmann::json::object();
	nlohmann::json network = nlohmann::json::object();
	nlohmann::json application;
	for (auto [key, out] : {std::pair{"agent", &agent}, std::pair{"network", &network},
				std::pair{"application", &application}}) {
		if (rest.contains(key)) {
			*out = rest[key];
			rest.erase(key);
			if (!out->is_object())
				t.fail(key, "expected a table (JSON object)");
		}
	}
	std::vector<std::string> baselines = {"static", "migration", "central", "swap"};
	t.string("name", s.name);
	t.string("description", s.description, true);
	t.integer("nodes", s.nodes, 1, 1 << 20);
	t.number("duration", s.duration, 1, 1e7);
	t.number("startup", s.startup, 0, 3600);
	t.integer("seed_peers", s.seedPeers, 1, 16);
	t.strings("baselines", baselines);
	t.finish();
	if (!t.error().empty())
		return t.error();
	for (const std::string &b : baselines)
		if (!kBaselines.count(b))
			return fmt::format("scenario key 'scenario.baselines': unknown baseline \"{}\" "
					   "(static, migration, central, swap)", b);
	s.baselines = baselines;

	for (size_t i = 0; i < classes.size(); ++i) {
		NodeClass c;
		c.name = fmt::format("class{}", i);
		if (std::string e = parseClass(classes[i], fmt::format("scenario.classes[{}]", i), c); !e.empty())
			return e;
		s.classes.push_back(c);
	}
	if (s.classes.empty())
		s.classes.push_back(NodeClass{});

	{
		ConfigTable n(network, "scenario.network");
		n.number("latency", s.network.latency, 0, 60);
		n.number("jitter", s.network.jitter, 0, 60);
		n.number("bandwidth", s.network.bandwidth, 1, 1e13);
		n.number("loss", s.network.loss, 0, 1);
		n.number("intra_seconds_per_byte", s.network.intraSecondsPerByte, 0, 1);
		n.finish();
		if (!n.error().empty())
			return n.error();
	}
	s.agent = agent;
	if (!application.is_null()) {
		ApplicationModel a;
		if (std::string e = parseApplication(application, a); !e.empty())
			return e;
		s.application = a;
	}
	for (size_t i = 0; i < events.size(); ++i) {
		ScenarioEvent e;
		if (std::string err = parseEvent(events[i], i, s, e); !err.empty())
			return err;
		s.events.push_back(e);
	}
	scenario = std::move(s);
	return {};
}

std::string loadScenarioFile(const std::string &path, Scenario &scenario)
{
	std::ifstream in(path);
	if (!in)
		return fmt::format("scenario '{}': cannot be read", path);
	nlohmann::json doc = nlohmann::json::parse(in, nullptr, false, true);
	if (doc.is_discarded())
		return fmt::format("scenario '{}': not valid JSON", path);
	std::string error = parseScenario(doc, scenario);
	// The tables are read by the agent's ConfigTable, whose lines say "config key".
	if (error.rfind("config key", 0) == 0)
		error.replace(0, 6, "scenario");
	return error.empty() ? error : fmt::format("{}: {}", path, error);
}

} // namespace malleo::sim
