// SPDX-License-Identifier: Apache-2.0
// The bridge's environment, read once before MPI_Init (pcm_bridge/src/reconfiguration/settings.h): the defaults
// docs/pcm-api.md gives, what each variable changes, and a malformed value kept as one line naming the variable and
// what is used instead, never a changed setting.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "reconfiguration/settings.h"

using namespace malleo::pcm;

namespace {

const char *const kVariables[] = {"MALLEO_POOL_ACTIVE", "MALLEO_AGREE_TIMEOUT", "MALLEO_FAULT",
				  "MALLEO_PCM_MODE",	"MALLEO_PCM_SPAWN",	"MALLEO_NODES",
				  "MALLEO_NODE_AGENTS", "MALLEO_CLUSTER_DIR",	"MALLEO_PCM_VERBOSE",
				  "MALLEO_PCM_HUGE_PAGES", "MALLEO_PCM_SHARED_PAGES"};

// Reads the settings of an environment holding `assignments` ("NAME=VALUE") and none of the other variables.
Settings readWith(std::initializer_list<const char *> assignments)
{
	for (const char *variable : kVariables)
		unsetenv(variable);
	for (const char *a : assignments) {
		const std::string text(a);
		const std::size_t eq = text.find('=');
		setenv(text.substr(0, eq).c_str(), text.substr(eq + 1).c_str(), 1);
	}
	return readSettings();
}

bool saysOnce(const Settings &s, const std::string &variable, const std::string &used)
{
	return s.problems.size() == 1 && s.problems[0].find(variable) != std::string::npos &&
	       s.problems[0].find(used) != std::string::npos;
}

} // namespace

TEST_CASE("the defaults: spawn mode, 10 s to agree, shared blocks, nothing said")
{
	const Settings s = readWith({});
	CHECK(s.mode == Mode::Spawn);
	CHECK(s.poolActive == 0);
	CHECK(s.agreeTimeout == 10.0);
	CHECK(s.sharedPages);
	CHECK_FALSE(s.hugePages);
	CHECK_FALSE(s.verbose);
	CHECK(s.problems.empty());
	// An empty value is no value.
	CHECK(readWith({"MALLEO_AGREE_TIMEOUT=", "MALLEO_PCM_MODE="}).problems.empty());
}

TEST_CASE("each variable changes its setting")
{
	Settings s = readWith({"MALLEO_POOL_ACTIVE=3"});
	CHECK(s.mode == Mode::Pool);
	CHECK(s.poolActive == 3);
	s = readWith({"MALLEO_POOL_ACTIVE=3", "MALLEO_PCM_MODE=spawn"});
	CHECK(s.mode == Mode::Spawn);
	s = readWith({"MALLEO_AGREE_TIMEOUT=2.5", "MALLEO_PCM_VERBOSE=1", "MALLEO_PCM_HUGE_PAGES=on",
		      "MALLEO_PCM_SHARED_PAGES=off"});
	CHECK(s.agreeTimeout == 2.5);
	CHECK(s.verbose);
	CHECK(s.hugePages);
	CHECK_FALSE(s.sharedPages);
	CHECK(s.problems.empty());
	CHECK(readWith({"MALLEO_PCM_SHARED_PAGES=on"}).sharedPagesAsked);
	CHECK_FALSE(readWith({"MALLEO_PCM_SPAWN=wait"}).backgroundSpawn);
	CHECK(readWith({"MALLEO_PCM_SPAWN=background"}).backgroundSpawnAsked);
}

TEST_CASE("a malformed value: one line naming it and what is used, the setting as if unset")
{
	Settings s = readWith({"MALLEO_AGREE_TIMEOUT=-1"});
	CHECK(s.agreeTimeout == 10.0);
	CHECK(saysOnce(s, "MALLEO_AGREE_TIMEOUT=-1", "10"));
	s = readWith({"MALLEO_PCM_SHARED_PAGES=maybe"});
	CHECK(s.sharedPages);
	CHECK(saysOnce(s, "MALLEO_PCM_SHARED_PAGES=maybe", "on"));
	s = readWith({"MALLEO_PCM_MODE=elastic", "MALLEO_POOL_ACTIVE=2"});
	CHECK(s.mode == Mode::Pool);
	CHECK(saysOnce(s, "MALLEO_PCM_MODE=elastic", "pool"));
	s = readWith({"MALLEO_FAULT=explode@x"});
	CHECK(saysOnce(s, "MALLEO_FAULT", "no injected faults"));
	// The pool's size is said after MPI_Init, when the launch's size is known: kept, not a line yet.
	s = readWith({"MALLEO_POOL_ACTIVE=lots"});
	CHECK(s.mode == Mode::Pool);
	CHECK(s.poolActive == 0);
	CHECK(s.poolActiveText == "lots");
	CHECK(s.problems.empty());
}
