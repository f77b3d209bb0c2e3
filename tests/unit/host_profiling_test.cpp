// SPDX-License-Identifier: Apache-2.0
// The "host" profiling module: /proc/stat parsing, busy fractions, σ, config,
// hwloc from committed XML, and the module end to end on files the test writes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <hwloc.h>
#include <nlohmann/json.hpp>

#include "calibration.h"
#include "cgroup_cpu.h"
#include "host_config.h"
#include "host_profiling.h"
#include "module_registry.h"
#include "proc_stat.h"
#include "stability.h"
#include "topology.h"

using namespace malleo;
using nlohmann::json;

namespace {

const std::string kHwlocData = MALLEO_HWLOC_TEST_DATA;

// A directory of its own per test case, removed at the end.
struct TempDir {
	std::filesystem::path path;
	TempDir()
	{
		std::string tmpl =
		    (std::filesystem::temp_directory_path() / "malleo-host-XXXXXX").string();
		REQUIRE(mkdtemp(tmpl.data()) != nullptr);
		path = tmpl;
	}
	~TempDir() { std::filesystem::remove_all(path); }

	std::string write(const std::string &name, const std::string &text) const
	{
		std::ofstream(path / name) << text;
		return (path / name).string();
	}
};

// The environment variable for one scope, so a failing check cannot leak it
// into the next test case.
struct ScopedEnv {
	const char *name;
	ScopedEnv(const char *n, const std::string &value) : name(n)
	{
		setenv(n, value.c_str(), 1);
	}
	~ScopedEnv() { unsetenv(name); }
};

// Four CPUs; cpuN's counters are user, system and idle as given, the rest 0.
std::string procStat(uint64_t ctxt, const std::vector<std::array<uint64_t, 3>> &cpus)
{
	std::string text = "cpu  0 0 0 0 0 0 0 0 0 0\n";
	for (size_t i = 0; i < cpus.size(); ++i)
		text += "cpu" + std::to_string(i) + " " + std::to_string(cpus[i][0]) + " 0 " +
			std::to_string(cpus[i][1]) + " " + std::to_string(cpus[i][2]) +
			" 0 0 0 0 0 0\n";
	text += "intr 12345 0 0 1 2 3\nctxt " + std::to_string(ctxt) +
		"\nbtime 1700000000\nprocesses 4242\nprocs_running 2\nprocs_blocked 0\n";
	return text;
}

const char *kSample = "cpu  24134 0 4622 1138459 678 0 52 51 0 0\n"
		      "cpu0 10141 1 2154 571705 36 2 7 25 3 4\n"
		      "cpu1 13993 0 2468 566754 641 0 45 25 0 0\n"
		      "intr 334743 0 0 0 0 0 0 0 0 0 0\n"
		      "ctxt 533992\n"
		      "btime 1763858400\n"
		      "processes 6221\n"
		      "softirq 208000 0 1 2 3 4 5 6 7 8 9\n";

} // namespace

TEST_SUITE_BEGIN("host_profiling");

TEST_CASE("parseProcStat reads the per-CPU lines and ctxt, skipping the rest")
{
	ProcStat s;
	REQUIRE(parseProcStat(kSample, s) == "");
	REQUIRE(s.cpus.size() == 2);
	const CpuTimes &c0 = s.cpus.at(0);
	CHECK(c0.user == 10141);
	CHECK(c0.nice == 1);
	CHECK(c0.system == 2154);
	CHECK(c0.idle == 571705);
	CHECK(c0.iowait == 36);
	CHECK(c0.irq == 2);
	CHECK(c0.softirq == 7);
	CHECK(c0.steal == 25);
	CHECK(c0.guest == 3);
	CHECK(c0.guestNice == 4);
	CHECK(s.cpus.at(1).user == 13993);
	CHECK(s.ctxt == 533992);
}

TEST_CASE("parseProcStat accepts old kernels' four counters and future kernels' extra ones")
{
	ProcStat s;
	REQUIRE(parseProcStat("cpu0 1 2 3 4\ncpu1 1 2 3 4 5 6 7 8 9 10 11 12\nctxt 7\n", s) == "");
	CHECK(s.cpus.at(0).idle == 4);
	CHECK(s.cpus.at(0).iowait == 0);
	CHECK(s.cpus.at(0).steal == 0);
	CHECK(s.cpus.at(1).guestNice == 10);
	CHECK(s.ctxt == 7);
}

TEST_CASE("a CPU missing from /proc/stat is an error when it is in the set")
{
	// Offline CPUs have no line: cpu1 is offline here.
	const char *before = "cpu0 100 0 0 100\ncpu2 100 0 0 100\nctxt 1\n";
	const char *after = "cpu0 150 0 0 150\ncpu2 200 0 0 100\nctxt 2\n";
	ProcStat b, a;
	REQUIRE(parseProcStat(before, b) == "");
	REQUIRE(parseProcStat(after, a) == "");
	CHECK(b.cpus.count(1) == 0);

	double upw = -1;
	std::string err = busyFraction(b, a, {0, 1}, upw);
	CHECK(err.find("cpu1") != std::string::npos);
	CHECK(upw == -1); // untouched on error

	// The CPUs that are there still measure: (50 + 100) busy of (100 + 100).
	REQUIRE(busyFraction(b, a, {0, 2}, upw) == "");
	CHECK(upw == doctest::Approx(0.75));
	CHECK(busyFraction(b, a, {}, upw).find("empty") != std::string::npos);
}

TEST_CASE("malformed /proc/stat text is an error naming the line, never a crash")
{
	struct Case {
		const char *text;
		const char *expect;
	};
	const Case cases[] = {
	    {"cpu0 1 2 x 4\nctxt 1\n", "line 1"},
	    {"cpu0 1 2 3 4\ncpuX 1 2 3 4\nctxt 1\n", "line 2"},
	    {"cpu0 1 2\nctxt 1\n", "at least 4"},
	    {"cpu0 1 2 3 4\ncpu0 1 2 3 4\nctxt 1\n", "twice"},
	    {"cpu0 1 2 3 -4\nctxt 1\n", "not a number"},
	    {"cpu0 1 2 3 99999999999999999999999\nctxt 1\n", "not a number"},
	    {"cpu0 1 2 3 4\nctxt many\n", "ctxt"},
	    {"cpu0 1 2 3 4\nctxt 1 2\n", "ctxt"},
	    {"cpu0 1 2 3 4\n", "no ctxt"},
	    {"cpu  1 2 3 4\nctxt 1\n", "no per-CPU line"},
	    {"", "no per-CPU line"},
	    {"\n\n\0garbage", "no per-CPU line"},
	};
	for (const Case &c : cases) {
		CAPTURE(c.text);
		ProcStat s;
		s.ctxt = 99;
		std::string err = parseProcStat(c.text, s);
		CHECK(err.find(c.expect) != std::string::npos);
		CHECK(s.ctxt == 99); // the output is left alone on error
	}
}

TEST_CASE("busy fraction of a CPU set between two readings, by hand")
{
	// cpu0: +60 user, +20 system, +100 idle, +20 iowait  -> 80 busy of 200
	// cpu1: +10 user, +5 softirq, +5 steal, +80 idle     -> 20 busy of 100
	// cpu2: +30 user of which 30 guest, +70 idle          -> 30 busy of 100
	//       (guest is already inside user: not counted twice)
	const char *before = "cpu0 100 0 50 800 50 0 0 0 0 0\n"
			     "cpu1 0 0 0 0 0 0 0 0 0 0\n"
			     "cpu2 10 0 0 0 0 0 0 0 10 0\n"
			     "ctxt 1000\n";
	const char *after = "cpu0 160 0 70 900 70 0 0 0 0 0\n"
			    "cpu1 10 0 0 80 0 0 5 5 0 0\n"
			    "cpu2 40 0 0 70 0 0 0 0 40 0\n"
			    "ctxt 1600\n";
	ProcStat b, a;
	REQUIRE(parseProcStat(before, b) == "");
	REQUIRE(parseProcStat(after, a) == "");

	CpuDelta d0 = cpuDelta(b.cpus.at(0), a.cpus.at(0));
	CHECK(d0.busy == 80);
	CHECK(d0.total == 200);
	CpuDelta d2 = cpuDelta(b.cpus.at(2), a.cpus.at(2));
	CHECK(d2.busy == 30);
	CHECK(d2.total == 100);

	double upw = 0;
	REQUIRE(busyFraction(b, a, {0}, upw) == "");
	CHECK(upw == doctest::Approx(0.4));
	REQUIRE(busyFraction(b, a, {1}, upw) == "");
	CHECK(upw == doctest::Approx(0.2));
	// CPUs weigh by their ticks: (80 + 20) / (200 + 100), so APW = 2/3.
	REQUIRE(busyFraction(b, a, {0, 1}, upw) == "");
	CHECK(upw == doctest::Approx(1.0 / 3.0));
	CHECK(1.0 - upw == doctest::Approx(2.0 / 3.0));
	REQUIRE(busyFraction(b, a, {0, 1, 2}, upw) == "");
	CHECK(upw == doctest::Approx(130.0 / 400.0));

	// The same reading twice: no tick elapsed, no fraction.
	CHECK(busyFraction(a, a, {0}, upw).find("no clock tick") != std::string::npos);
}

TEST_CASE("a counter going backwards counts as no time")
{
	// iowait decreases on some tickless kernels; it must not wrap to 2^64.
	CpuTimes b{.user = 100, .idle = 100, .iowait = 50};
	CpuTimes a{.user = 150, .idle = 150, .iowait = 40};
	CpuDelta d = cpuDelta(b, a);
	CHECK(d.busy == 50);
	CHECK(d.total == 100);
}

TEST_CASE("context-switch rate")
{
	CHECK(contextSwitchRate(1000, 1600, 2.0) == doctest::Approx(300.0));
	CHECK(contextSwitchRate(1000, 1000, 1.0) == 0.0);
	CHECK(contextSwitchRate(1000, 1600, 0.0) == 0.0);
	CHECK(contextSwitchRate(1600, 1000, 1.0) == 0.0); // a reading from another boot
}

TEST_CASE("σ is the population standard deviation of the last k APW values")
{
	CHECK(standardDeviation(std::vector<double>{}) == 0.0);
	CHECK(standardDeviation(std::vector<double>{0.3}) == 0.0);
	CHECK(standardDeviation(std::vector<double>{0.6, 0.6, 0.6}) == doctest::Approx(0.0));
	// mean 0.5; squared deviations 0.09 0.01 0.01 0.01 0 0 0.04 0.16 sum 0.32; /8 = 0.04
	CHECK(standardDeviation(std::vector<double>{0.2, 0.4, 0.4, 0.4, 0.5, 0.5, 0.7, 0.9}) ==
	      doctest::Approx(0.2));

	StabilityWindow w(3);
	CHECK(w.sigma() == 0.0);
	w.push(1.0);
	CHECK(w.sigma() == 0.0);
	w.push(0.0);
	CHECK(w.sigma() == doctest::Approx(0.5)); // mean 0.5, both 0.5 away
	w.push(0.5);
	w.push(0.7); // 1.0 leaves: {0.0, 0.5, 0.7}
	w.push(0.9); // 0.0 leaves: {0.5, 0.7, 0.9}, mean 0.7, var 0.08/3
	CHECK(w.count() == 3);
	CHECK(w.sigma() == doctest::Approx(std::sqrt(0.08 / 3.0)));
}

TEST_CASE("host config: defaults and accepted values")
{
	HostConfig c;
	REQUIRE(parseHostConfig(json::object(), c) == "");
	CHECK(c.cpus.empty());
	CHECK(!c.pw);
	CHECK(c.calibrationMs == 100);
	CHECK(c.stabilityWindow == 10);
	CHECK(c.procStat == "/proc/stat");

	REQUIRE(parseHostConfig({{"cpus", {3, 1, 2}},
				 {"pw", 4.5},
				 {"calibration_ms", 20},
				 {"stability_window", 5},
				 {"proc_stat", "/tmp/x"}},
				c) == "");
	CHECK(c.cpus == std::vector<int>{1, 2, 3});
	REQUIRE(c.pw);
	CHECK(*c.pw == 4.5);
	CHECK(c.calibrationMs == 20);
	CHECK(c.stabilityWindow == 5);
	CHECK(c.procStat == "/tmp/x");

	// null asks for a calibration, as leaving the key out does
	REQUIRE(parseHostConfig({{"pw", nullptr}}, c) == "");
	CHECK(!c.pw);
}

TEST_CASE("host config errors name the key and leave the config alone")
{
	struct Case {
		json table;
		const char *key;
		const char *what;
	};
	const Case cases[] = {
	    {{{"cpu", {0}}}, "'host.cpu'", "unknown key"},
	    {{{"cpus", "0-3"}}, "'host.cpus'", "list of CPU numbers"},
	    {{{"cpus", json::array()}}, "'host.cpus'", "non-empty"},
	    {{{"cpus", {0, -1}}}, "'host.cpus'", "list of CPU numbers"},
	    {{{"cpus", {0, 1.5}}}, "'host.cpus'", "list of CPU numbers"},
	    {{{"cpus", {2, 1, 2}}}, "'host.cpus'", "CPU 2 is listed twice"},
	    {{{"pw", "fast"}}, "'host.pw'", "expected a number"},
	    {{{"pw", 0}}, "'host.pw'", "greater than 0"},
	    {{{"pw", -3}}, "'host.pw'", "outside"},
	    {{{"calibration_ms", 0}}, "'host.calibration_ms'", "outside"},
	    {{{"calibration_ms", 2.5}}, "'host.calibration_ms'", "integer"},
	    {{{"stability_window", 1}}, "'host.stability_window'", "outside"},
	    {{{"stability_window", "10"}}, "'host.stability_window'", "integer"},
	    {{{"proc_stat", 3}}, "'host.proc_stat'", "string"},
	    {{{"proc_stat", ""}}, "'host.proc_stat'", "non-empty"},
	    {json::array({1, 2}), "'host'", "table"},
	};
	for (const Case &c : cases) {
		CAPTURE(c.table.dump());
		HostConfig config;
		config.procStat = "/unchanged";
		std::string err = parseHostConfig(c.table, config);
		CHECK(err.find(c.key) != std::string::npos);
		CHECK(err.find(c.what) != std::string::npos);
		CHECK(err.find('\n') == std::string::npos);
		CHECK(config.procStat == "/unchanged");

		HostProfiling module; // the module says the same, without throwing
		CHECK(module.configure(c.table) == err);
	}
}

TEST_CASE("hwloc: the API major version is checked")
{
	CHECK(checkHwlocVersion(HWLOC_API_VERSION) == "");
	CHECK(checkHwlocVersion(hwloc_get_api_version()) == "");
	std::string err = checkHwlocVersion(0x00010b00);
	CHECK(err.find("1.11.0") != std::string::npos);
	CHECK(err.find("does not match") != std::string::npos);
}

TEST_CASE("hwloc: topology counts from committed XML")
{
	json t;
	// Synthetic "package:2 numa:1 l3:1 l2:4 l1d:1 core:1 pu:2": PUs 2k and 2k+1 share core k.
	REQUIRE(describeTopology(kHwlocData + "/two_packages_16_pus.xml", {0, 1, 8, 99}, t) == "");
	CHECK(t["packages"] == 2);
	CHECK(t["cores"] == 8);
	CHECK(t["pus"] == 16);
	CHECK(t["numa_nodes"] == 2);
	CHECK(t["caches"]["l3"]["count"] == 2);
	CHECK(t["caches"]["l2"]["count"] == 8);
	CHECK(t["caches"]["l1d"]["count"] == 8);
	CHECK(t["caches"]["l2"]["size_bytes"] == 4 * 1024 * 1024);
	CHECK(t["cpuset"]["pus"] == 3);
	CHECK(t["cpuset"]["cores"] == 2);    // PUs 0 and 1 are one core
	CHECK(t["cpuset"]["packages"] == 2); // PU 8 is on the second package
	CHECK(t["cpuset"]["numa_nodes"] == 2);
	CHECK(t["cpuset"]["not_in_topology"] == json::array({99}));

	// lstopo --no-io of a two-CPU virtual machine.
	REQUIRE(describeTopology(kHwlocData + "/one_package_2_cores.xml", {1}, t) == "");
	CHECK(t["packages"] == 1);
	CHECK(t["cores"] == 2);
	CHECK(t["pus"] == 2);
	CHECK(t["numa_nodes"] == 1);
	CHECK(t["caches"]["l3"]["count"] == 1);
	CHECK(t["caches"]["l1d"]["size_bytes"] == 49152);
	CHECK(t["cpuset"]["cores"] == 1);
	CHECK(t["source"].get<std::string>().find("one_package_2_cores.xml") != std::string::npos);

	std::string err = describeTopology(kHwlocData + "/no_such_file.xml", {0}, t);
	CHECK(err.find("no_such_file.xml") != std::string::npos);
	TempDir dir;
	err = describeTopology(dir.write("bad.xml", "<topology>not really</topology"), {0}, t);
	CHECK(err.find("bad.xml") != std::string::npos);
}

TEST_CASE("calibration: speed is normalised to the reference rate")
{
	CHECK(perCoreSpeed(static_cast<uint64_t>(kReferenceRoundsPerSecond), 1.0) ==
	      doctest::Approx(1.0));
	CHECK(perCoreSpeed(static_cast<uint64_t>(kReferenceRoundsPerSecond), 0.5) ==
	      doctest::Approx(2.0));
	CHECK(perCoreSpeed(100, 0.0) == 0.0);
	Calibration c = calibrate(5);
	CHECK(c.rounds > 0);
	CHECK(c.seconds > 0);
	CHECK(c.perCoreSpeed > 0);
}

TEST_CASE("host module end to end on /proc/stat files written by the test")
{
	TempDir dir;
	ScopedEnv xml("MALLEO_HWLOC_XML", kHwlocData + "/two_packages_16_pus.xml");
	// cpu0 and cpu3 are busy but outside the set: they must not count.
	std::string path =
	    dir.write("stat", procStat(1000, {{0, 0, 0}, {100, 0, 100}, {0, 0, 200}, {0, 0, 0}}));

	HostProfiling m;
	REQUIRE(
	    m.configure(
		{{"cpus", {1, 2}}, {"pw", 4.0}, {"stability_window", 3}, {"proc_stat", path}}) ==
	    "");
	REQUIRE(m.start() == "");
	CHECK(m.cpus() == std::vector<int>{1, 2});

	json d = m.describe();
	CHECK(d["pw"] == 4.0);
	CHECK(d["pw_source"] == "config");
	CHECK(d["calibration"].is_null());
	CHECK(d["cores"] == 2);
	CHECK(d["cpu_cores"] == 2.0); // a whole machine's CPUs: a process's machine cores are the node's
	CHECK(d["topology"]["packages"] == 2);
	CHECK(d["topology"]["cpuset"]["cores"] == 2); // PU1 on core 0, PU2 on core 1
	CHECK(d["topology"]["cpuset"]["packages"] == 1);

	// First sample: primes, reports an idle node.
	NodeProfile p = m.sample(10.0);
	CHECK(p.apw == 1.0);
	CHECK(p.upw == 0.0);
	CHECK(p.sigma == 0.0);
	CHECK(p.pw == 4.0);
	CHECK(p.cores == 2);
	CHECK(p.processes == 0);

	// cpu1: +75 busy +25 idle; cpu2: +25 busy +75 idle -> 100 of 200 busy.
	// ctxt +2000 over 2 s.
	dir.write("stat", procStat(3000, {{500, 0, 0}, {150, 25, 125}, {0, 25, 275}, {500, 0, 0}}));
	p = m.sample(12.0);
	CHECK(p.upw == doctest::Approx(0.5));
	CHECK(p.apw == doctest::Approx(0.5));
	CHECK(p.ctxswRate == doctest::Approx(1000.0));
	CHECK(p.sigma == 0.0); // one value in the window

	// Both fully busy for 100 ticks each: APW 0; σ of {0.5, 0} = 0.25.
	dir.write("stat",
		  procStat(3500, {{500, 0, 0}, {250, 25, 125}, {100, 25, 275}, {500, 0, 0}}));
	p = m.sample(13.0);
	CHECK(p.upw == doctest::Approx(1.0));
	CHECK(p.apw == doctest::Approx(0.0));
	CHECK(p.ctxswRate == doctest::Approx(500.0));
	CHECK(p.sigma == doctest::Approx(0.25));

	// Same counters again (within one tick): the last profile, unchanged.
	NodeProfile same = m.sample(13.5);
	CHECK(same.apw == p.apw);
	CHECK(same.sigma == p.sigma);
	CHECK(same.ctxswRate == p.ctxswRate);

	// A broken file: the last profile, and the reason in describe().
	dir.write("stat", "cpu1 what\n");
	same = m.sample(14.0);
	CHECK(same.apw == p.apw);
	CHECK(m.describe()["last_error"].get<std::string>().find("line 1") != std::string::npos);

	// Recovered: measured from the last good reading (t = 13), all idle.
	dir.write("stat",
		  procStat(3500, {{500, 0, 0}, {250, 25, 225}, {100, 25, 375}, {500, 0, 0}}));
	p = m.sample(15.0);
	CHECK(p.apw == doctest::Approx(1.0));
	CHECK(p.ctxswRate == 0.0);
	CHECK(m.describe()["last_error"].is_null());
	// Window of 3: {0.5, 0, 1} -> mean 0.5, σ = sqrt(0.5/3)
	CHECK(p.sigma == doctest::Approx(std::sqrt(0.5 / 3.0)));
}

TEST_CASE("host module: niced time is load unless niced_is_load is false")
{
	TempDir dir;
	ScopedEnv xml("MALLEO_HWLOC_XML", kHwlocData + "/two_packages_16_pus.xml");
	// cpu1 over 100 ticks: +10 user, +80 nice, +10 idle.
	const std::string before = "cpu1 100 1000 0 500 0 0 0 0 0 0\nctxt 1000\n";
	const std::string after = "cpu1 110 1080 0 510 0 0 0 0 0 0\nctxt 1100\n";
	for (bool niced : {true, false}) {
		std::string path = dir.write("stat", before);
		HostProfiling m;
		REQUIRE(m.configure({{"cpus", {1}},
				     {"pw", 1.0},
				     {"proc_stat", path},
				     {"niced_is_load", niced}}) == "");
		REQUIRE(m.start() == "");
		CHECK(m.describe()["niced_is_load"] == niced);
		m.sample(10.0);
		dir.write("stat", after);
		NodeProfile p = m.sample(11.0);
		CHECK(p.upw == doctest::Approx(niced ? 0.9 : 0.1));
		CHECK(p.apw == doctest::Approx(niced ? 0.1 : 0.9));
	}
	HostProfiling m;
	CHECK(m.configure({{"niced_is_load", "no"}}).find("host.niced_is_load") !=
	      std::string::npos);
}

TEST_CASE("host module start() refuses what it cannot measure")
{
	TempDir dir;
	ScopedEnv xml("MALLEO_HWLOC_XML", kHwlocData + "/two_packages_16_pus.xml");
	std::string path = dir.write("stat", procStat(1, {{0, 0, 1}, {0, 0, 1}}));
	{
		HostProfiling m;
		REQUIRE(m.configure({{"cpus", {1, 7}}, {"pw", 1.0}, {"proc_stat", path}}) == "");
		std::string err = m.start();
		CHECK(err.find("host.cpus") != std::string::npos);
		CHECK(err.find("cpu7") != std::string::npos);
	}
	{
		HostProfiling m;
		REQUIRE(m.configure(
			    {{"pw", 1.0}, {"proc_stat", (dir.path / "missing").string()}}) == "");
		CHECK(m.start().find("missing") != std::string::npos);
	}
	{
		ScopedEnv bad("MALLEO_HWLOC_XML", (dir.path / "none.xml").string());
		HostProfiling m;
		REQUIRE(m.configure({{"cpus", {0}}, {"pw", 1.0}, {"proc_stat", path}}) == "");
		std::string err = m.start();
		CHECK(err.find("none.xml") != std::string::npos);
		CHECK(err.find("MALLEO_HWLOC_XML") != std::string::npos);
	}
}

TEST_CASE("host module: PW by calibration unless the config gives it")
{
	TempDir dir;
	ScopedEnv xml("MALLEO_HWLOC_XML", kHwlocData + "/two_packages_16_pus.xml");
	std::string path = dir.write("stat", procStat(1, {{0, 0, 1}, {0, 0, 1}, {0, 0, 1}}));

	HostProfiling m;
	REQUIRE(m.configure({{"cpus", {0, 1, 2}}, {"calibration_ms", 5}, {"proc_stat", path}}) ==
		"");
	REQUIRE(m.start() == "");
	json d = m.describe();
	CHECK(d["pw_source"] == "calibration");
	REQUIRE(d["calibration"].is_object());
	double speed = d["calibration"]["per_core_speed"];
	CHECK(speed > 0);
	CHECK(d["pw"].get<double>() == doctest::Approx(3 * speed));
	CHECK(m.sample(1.0).pw == doctest::Approx(3 * speed));

	HostProfiling given;
	REQUIRE(given.configure({{"cpus", {0, 1, 2}}, {"pw", 2.5}, {"proc_stat", path}}) == "");
	REQUIRE(given.start() == "");
	CHECK(given.describe()["pw_source"] == "config");
	CHECK(given.describe()["calibration"].is_null());
	CHECK(given.sample(1.0).pw == 2.5);
}

TEST_CASE("host module: the default CPU set is the agent's affinity")
{
	std::vector<int> affinity;
	REQUIRE(affinityCpus(affinity) == "");
	REQUIRE(!affinity.empty());

	// A /proc/stat with a line for every CPU we may run on.
	std::vector<std::array<uint64_t, 3>> lines(static_cast<size_t>(affinity.back() + 1),
						   {0, 0, 1});
	TempDir dir;
	ScopedEnv xml("MALLEO_HWLOC_XML", kHwlocData + "/two_packages_16_pus.xml");
	std::string path = dir.write("stat", procStat(1, lines));

	HostProfiling m;
	REQUIRE(m.configure({{"pw", 1.0}, {"proc_stat", path}}) == "");
	REQUIRE(m.start() == "");
	CHECK(m.cpus() == affinity);
	CHECK(m.sample(0.0).cores == static_cast<int>(affinity.size()));
}

TEST_CASE("cgroup slice: the controller's group in /proc/self/cgroup")
{
	const std::string text = "9:name=systemd:/\n4:memory:/process_api/abc\n2:cpuacct:/malleo/h2\n"
				 "1:cpu:/malleo/h1\n0::/\n";
	std::string path;
	CHECK(cgroupOfController(text, "cpu", path) == "");
	CHECK(path == "/malleo/h1");
	CHECK(cgroupOfController(text, "cpuacct", path) == "");
	CHECK(path == "/malleo/h2");
	// Mounted together (systemd's cpu,cpuacct): either name finds the line.
	CHECK(cgroupOfController("3:cpuacct,cpu:/x\n", "cpu", path) == "");
	CHECK(path == "/x");
	// A name that only begins like the controller's is another controller.
	CHECK(cgroupOfController("5:cpuset:/y\n0::/z\n", "cpu", path).find("no cgroup of the cpu controller") == 0);
	CHECK(cgroupOfController("", "cpu", path) != "");
}

TEST_CASE("cgroup slice: quota in cores, used share against the quota")
{
	CHECK(quotaCores(25000, 100000) == doctest::Approx(0.25));
	CHECK(quotaCores(150000, 100000) == doctest::Approx(1.5));
	CHECK(!quotaCores(-1, 100000)); // no quota
	CHECK(!quotaCores(25000, 0));

	// A quarter core busy for 2 s used 0.5 s of CPU time: all of its quota.
	CHECK(*sliceBusyFraction(1'000'000'000, 1'500'000'000, 2.0, 0.25) == doctest::Approx(1.0));
	// 0.1 s in 2 s of a quarter core: a fifth of it.
	CHECK(*sliceBusyFraction(0, 100'000'000, 2.0, 0.25) == doctest::Approx(0.2));
	// A burst straddling two samples may exceed the quota over the interval: cut to 1.
	CHECK(*sliceBusyFraction(0, 400'000'000, 1.0, 0.25) == 1.0);
	CHECK(*sliceBusyFraction(7, 7, 1.0, 0.5) == 0.0);
	CHECK(!sliceBusyFraction(10, 5, 1.0, 0.25)); // the counter went backwards
	CHECK(!sliceBusyFraction(0, 5, 0.0, 0.25));
	CHECK(!sliceBusyFraction(0, 5, 1.0, 0.0));
}

TEST_CASE("host module on a cgroup slice written by the test")
{
	TempDir dir;
	ScopedEnv xml("MALLEO_HWLOC_XML", kHwlocData + "/two_packages_16_pus.xml");
	std::filesystem::create_directories(dir.path / "cg" / "cpu" / "malleo" / "h1");
	std::filesystem::create_directories(dir.path / "cg" / "cpuacct" / "malleo" / "h1");
	dir.write("cg/cpu/malleo/h1/cpu.cfs_quota_us", "25000\n");
	dir.write("cg/cpu/malleo/h1/cpu.cfs_period_us", "100000\n");
	const std::string usage = dir.write("cg/cpuacct/malleo/h1/cpuacct.usage", "1000000000\n");
	std::string stat = dir.write("stat", procStat(1, {{0, 0, 1}, {0, 0, 1}}));

	HostProfiling m;
	REQUIRE(m.configure({{"cpus", {0, 1}},
			     {"calibration_ms", 5},
			     {"proc_stat", stat},
			     {"cgroup", "malleo/h1"},
			     {"cgroup_root", (dir.path / "cg").string()}}) == "");
	REQUIRE(m.start() == "");
	json d = m.describe();
	CHECK(d["cores"] == 1); // a quarter of a core runs on one CPU at a time
	CHECK(d["cgroup"]["quota_cores"] == doctest::Approx(0.25));
	CHECK(d["cpu_cores"] == doctest::Approx(0.25)); // a process's machine cores count four times in the node's
	const double speed = d["calibration"]["per_core_speed"];
	CHECK(d["pw"].get<double>() == doctest::Approx(0.25 * speed));

	NodeProfile p = m.sample(10.0); // primes
	CHECK(p.apw == 1.0);
	CHECK(p.cores == 1);
	// 0.3 s of CPU in 2 s: 60 % of the slice, although /proc/stat says the CPUs are idle.
	dir.write("cg/cpuacct/malleo/h1/cpuacct.usage", "1300000000\n");
	dir.write("stat", procStat(201, {{0, 0, 201}, {0, 0, 201}}));
	p = m.sample(12.0);
	CHECK(p.upw == doctest::Approx(0.6));
	CHECK(p.apw == doctest::Approx(0.4));
	// CPUs kept busy (by the other slices of the machine) say nothing of the slice's share: its own use counts.
	dir.write("cg/cpuacct/malleo/h1/cpuacct.usage", "1400000000\n");
	dir.write("stat", procStat(301, {{100, 0, 201}, {100, 0, 201}}));
	p = m.sample(14.0);
	CHECK(p.upw == doctest::Approx(0.2));
	CHECK(p.apw == doctest::Approx(0.8));
	// The counter going backwards is an error kept in describe(); the profile stays.
	dir.write("cg/cpuacct/malleo/h1/cpuacct.usage", "5\n");
	p = m.sample(15.0);
	CHECK(p.upw == doctest::Approx(0.2));
	CHECK(m.describe()["last_error"].get<std::string>().find("went backwards") != std::string::npos);
	(void)usage;

	// A group without a quota, or none at all, is refused at start in one line.
	dir.write("cg/cpu/malleo/h1/cpu.cfs_quota_us", "-1\n");
	HostProfiling unlimited;
	REQUIRE(unlimited.configure({{"cpus", {0}}, {"pw", 1.0}, {"proc_stat", stat}, {"cgroup", "malleo/h1"},
				     {"cgroup_root", (dir.path / "cg").string()}}) == "");
	CHECK(unlimited.start().find("has no CPU quota") != std::string::npos);
	HostProfiling missing;
	REQUIRE(missing.configure({{"cpus", {0}}, {"pw", 1.0}, {"proc_stat", stat}, {"cgroup", "malleo/h9"},
				   {"cgroup_root", (dir.path / "cg").string()}}) == "");
	CHECK(missing.start().find("host.cgroup") != std::string::npos);
	HostProfiling escape;
	REQUIRE(escape.configure({{"cpus", {0}}, {"pw", 1.0}, {"proc_stat", stat}, {"cgroup", "../x"},
				  {"cgroup_root", (dir.path / "cg").string()}}) == "");
	CHECK(escape.start().find("without '..'") != std::string::npos);
}

TEST_CASE("calibration in thread CPU time counts only the thread's own time")
{
	Calibration c = calibrate(5, CalibrationClock::ThreadCpu);
	CHECK(c.rounds > 0);
	CHECK(c.seconds >= 0.005);
	CHECK(c.perCoreSpeed > 0);
}

TEST_CASE("host is a built-in profiling module")
{
	ModuleLoadResult r = loadModule(ModuleKind::Profiling, "host", {});
	REQUIRE(r.error == "");
	CHECK(r.handle.source() == "built-in");
	CHECK(dynamic_cast<ProfilingModule *>(r.handle.get()) != nullptr);
}

TEST_SUITE_END();
