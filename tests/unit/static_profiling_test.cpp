// SPDX-License-Identifier: Apache-2.0
// The "static" profiling module: configured values, ranges and the schedule.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "module_registry.h"
#include "static_config.h"
#include "static_profiling.h"

using namespace malleo;
using nlohmann::json;

TEST_SUITE_BEGIN("static_profiling");

TEST_CASE("defaults: an idle node of one core of speed 1")
{
	StaticProfiling m;
	REQUIRE(m.configure(json::object()) == "");
	REQUIRE(m.start() == "");
	NodeProfile p = m.sample(5.0);
	CHECK(p.pw == 1.0);
	CHECK(p.apw == 1.0);
	CHECK(p.upw == 0.0);
	CHECK(p.cores == 1);
	CHECK(p.ctxswRate == 0.0);
	CHECK(p.sigma == 0.0);
	CHECK(p.processes == 0);
}

TEST_CASE("configured values are reported, upw defaulting to 1 − apw")
{
	StaticProfiling m;
	REQUIRE(m.configure({{"pw", 3.5},
			     {"apw", 0.25},
			     {"cores", 4},
			     {"ctxsw_rate", 1200},
			     {"sigma", 0.05}}) == "");
	REQUIRE(m.start() == "");
	NodeProfile p = m.sample(0.0);
	CHECK(p.pw == 3.5);
	CHECK(p.apw == 0.25);
	CHECK(p.upw == doctest::Approx(0.75));
	CHECK(p.cores == 4);
	CHECK(p.ctxswRate == 1200.0);
	CHECK(p.sigma == 0.05);

	json d = m.describe();
	CHECK(d["module"] == "static");
	CHECK(d["pw"] == 3.5);
	CHECK(d["apw"] == 0.25);
	CHECK(d["upw"].get<double>() == doctest::Approx(0.75));
	CHECK(d["cores"] == 4);
	CHECK(d["ctxsw_rate"] == 1200.0);
	CHECK(d["sigma"] == 0.05);
	CHECK(d["schedule"] == json::array());

	// An explicit upw is kept even when it is not the complement.
	REQUIRE(m.configure({{"apw", 0.5}, {"upw", 0.2}}) == "");
	p = m.sample(1.0);
	CHECK(p.apw == 0.5);
	CHECK(p.upw == 0.2);
}

TEST_CASE("config errors name the key and keep the previous configuration")
{
	struct Case {
		json table;
		const char *key;
		const char *what;
	};
	const Case cases[] = {
	    {{{"power", 2}}, "'static.power'", "unknown key"},
	    {{{"pw", 0}}, "'static.pw'", "greater than 0"},
	    {{{"pw", -1}}, "'static.pw'", "outside"},
	    {{{"pw", "big"}}, "'static.pw'", "expected a number"},
	    // What a peer would refuse in a profile (kProfilePowerMax) is refused at start, not accepted and then ignored.
	    {{{"pw", 2e5}}, "'static.pw'", "outside"},
	    {{{"apw", 1.5}}, "'static.apw'", "outside [0, 1]"},
	    {{{"apw", -0.1}}, "'static.apw'", "outside [0, 1]"},
	    {{{"upw", 2}}, "'static.upw'", "outside [0, 1]"},
	    {{{"cores", 0}}, "'static.cores'", "outside"},
	    {{{"cores", 2.5}}, "'static.cores'", "integer"},
	    {{{"ctxsw_rate", -5}}, "'static.ctxsw_rate'", "outside"},
	    {{{"sigma", 3}}, "'static.sigma'", "outside"},
	    {{{"schedule", {{"at", 1}}}}, "'static.schedule'", "expected a list"},
	    {{{"schedule", {1, 2}}}, "'static.schedule[0]'", "table"},
	    {{{"schedule", json::array({{{"apw", 0.5}}})}}, "'static.schedule[0].at'", "missing"},
	    {{{"schedule", json::array({{{"at", 1}}})}}, "'static.schedule[0].apw'", "missing"},
	    {{{"schedule", json::array({{{"at", 1}, {"apw", 0.5}, {"load", 1}}})}},
	     "'static.schedule[0].load'",
	     "unknown key"},
	    {{{"schedule", json::array({{{"at", 1}, {"apw", 1.2}}})}},
	     "'static.schedule[0].apw'",
	     "outside [0, 1]"},
	    {{{"schedule", json::array({{{"at", -1}, {"apw", 0.5}}})}},
	     "'static.schedule[0].at'",
	     "outside"},
	    {{{"schedule", json::array({{{"at", 5}, {"apw", 0.5}}, {{"at", 5}, {"apw", 0.2}}})}},
	     "'static.schedule[1].at'",
	     "not after"},
	    {json("static"), "'static'", "table"},
	};
	for (const Case &c : cases) {
		CAPTURE(c.table.dump());
		StaticConfig config;
		config.base.pw = 7.0;
		std::string err = parseStaticConfig(c.table, config);
		CHECK(err.find(c.key) != std::string::npos);
		CHECK(err.find(c.what) != std::string::npos);
		CHECK(err.find('\n') == std::string::npos);
		CHECK(config.base.pw == 7.0);

		StaticProfiling m;
		CHECK(m.configure(c.table) == err);
	}
}

TEST_CASE("schedule steps apply from their time after the first sample")
{
	StaticProfiling m;
	REQUIRE(m.configure({{"pw", 2.0},
			     {"apw", 0.9},
			     {"cores", 2},
			     {"schedule",
			      {{{"at", 10}, {"apw", 0.5}},
			       {{"at", 20}, {"apw", 0.25}, {"upw", 0.5}},
			       {{"at", 30}, {"upw", 0.0}}}}}) == "");
	REQUIRE(m.start() == "");

	// The clock is the agent's: the schedule counts from the first sample (100 s).
	NodeProfile p = m.sample(100.0);
	CHECK(p.apw == 0.9);
	CHECK(p.upw == doctest::Approx(0.1));
	p = m.sample(109.5);
	CHECK(p.apw == 0.9);
	p = m.sample(110.0);
	CHECK(p.apw == 0.5);
	CHECK(p.upw == 0.5);
	CHECK(p.pw == 2.0); // only apw and upw follow the schedule
	CHECK(p.cores == 2);
	p = m.sample(125.0);
	CHECK(p.apw == 0.25);
	CHECK(p.upw == 0.5);
	p = m.sample(1000.0);
	CHECK(p.apw == 1.0);
	CHECK(p.upw == 0.0);

	// start() again begins a new run: the next sample is time 0.
	REQUIRE(m.start() == "");
	CHECK(m.sample(5000.0).apw == 0.9);
	CHECK(m.sample(5010.0).apw == 0.5);

	json d = m.describe();
	REQUIRE(d["schedule"].size() == 3);
	CHECK(d["schedule"][1] == json({{"at", 20.0}, {"apw", 0.25}, {"upw", 0.5}}));
	CHECK(d["schedule"][2]["apw"] == 1.0);
}

TEST_CASE("profileAt is the schedule as a pure function")
{
	StaticConfig c;
	REQUIRE(parseStaticConfig({{"schedule", json::array({{{"at", 0}, {"apw", 0.3}}})}}, c) ==
		"");
	CHECK(profileAt(c, 0.0).apw == 0.3); // a step at 0 applies from the first sample
	CHECK(profileAt(c, 0.0).upw == doctest::Approx(0.7));
	CHECK(profileAt(c, -1.0).apw == 1.0);
}

TEST_CASE("static is a built-in profiling module")
{
	ModuleLoadResult r = loadModule(ModuleKind::Profiling, "static", {});
	REQUIRE(r.error == "");
	CHECK(dynamic_cast<ProfilingModule *>(r.handle.get()) != nullptr);
}

TEST_SUITE_END();
