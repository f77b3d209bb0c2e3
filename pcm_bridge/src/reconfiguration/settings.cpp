// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/settings.h"

#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

namespace malleo::pcm {

namespace {

// A variable's text, or null when it is not set or empty.
const char *environment(const char *variable)
{
	const char *text = std::getenv(variable);
	return text && *text ? text : nullptr;
}

// A positive number from the environment: an integer or, for a double, any decimal. `fallback` when not set; on a
// malformed value, `fallback` and one line in `problems`.
template<typename Number>
Number positive(const char *variable, Number fallback, std::vector<std::string> &problems)
{
	const char *text = environment(variable);
	if (!text)
		return fallback;
	char *end = nullptr;
	errno = 0;
	Number value{};
	if constexpr (std::is_integral_v<Number>)
		value = std::strtol(text, &end, 10);
	else
		value = std::strtod(text, &end);
	if (errno || *end || !(value > 0)) {
		char line[256];
		if constexpr (std::is_integral_v<Number>)
			std::snprintf(line, sizeof line, "%s=%s is not a positive integer; using %ld", variable, text,
				      static_cast<long>(fallback));
		else
			std::snprintf(line, sizeof line, "%s=%s is not a positive number of seconds; using %g", variable,
				      text, static_cast<double>(fallback));
		problems.emplace_back(line);
		return fallback;
	}
	return value;
}

// Which of two words a variable says: 0 or 1, or nothing when it is not set or says another word (then one line in
// `problems`: the caller goes on with word `fallback`).
std::optional<int> choice(const char *variable, const char *first, const char *second, int fallback,
			  std::vector<std::string> &problems)
{
	const char *text = environment(variable);
	if (!text)
		return std::nullopt;
	if (std::strcmp(text, first) == 0)
		return 0;
	if (std::strcmp(text, second) == 0)
		return 1;
	problems.push_back(std::string(variable) + "=" + text + " is not " + first + " or " + second + "; using " +
			   (fallback == 0 ? first : second));
	return std::nullopt;
}

std::string text(const char *variable)
{
	const char *value = std::getenv(variable);
	return std::string(value ? value : "");
}

} // namespace

Settings readSettings()
{
	Settings settings;
	auto &problems = settings.problems;
	if (const char *pool = environment("MALLEO_POOL_ACTIVE")) {
		// Its fallback, the launch's size, is known after MPI_Init only: start() says what is wrong.
		std::vector<std::string> unsaid;
		settings.poolActive = positive<long>("MALLEO_POOL_ACTIVE", 0, unsaid);
		if (!unsaid.empty())
			settings.poolActiveText = pool;
		settings.mode = Mode::Pool;
	}
	settings.agreeTimeout = positive<double>("MALLEO_AGREE_TIMEOUT", 10.0, problems);
	settings.faults.stallSeconds = positive<double>("MALLEO_FAULT_STALL", 1.5, problems);
	if (const char *faults = environment("MALLEO_FAULT")) {
		if (auto error = parseFaults(faults, settings.faults); !error.empty())
			problems.push_back(error + "; no injected faults");
	}
	const int mode = settings.mode == Mode::Pool ? 0 : 1;
	settings.mode = choice("MALLEO_PCM_MODE", "pool", "spawn", mode, problems).value_or(mode) == 0 ? Mode::Pool
												      : Mode::Spawn;
	const std::optional<int> spawn = choice("MALLEO_PCM_SPAWN", "background", "wait", 0, problems);
	settings.backgroundSpawnAsked = spawn == 0;
#ifdef OPEN_MPI
	settings.backgroundSpawn = settings.mode == Mode::Spawn && spawn != 1;
#endif
	if (auto error = parseNodeMap(text("MALLEO_NODES"), text("MALLEO_NODE_AGENTS"), text("MALLEO_CLUSTER_DIR"),
				      settings.nodes);
	    !error.empty())
		problems.push_back(error + "; no nodes described");
	else if (auto bad = parseNodeHosts(text("MALLEO_NODE_HOSTS"), text("MALLEO_HOSTS"), settings.nodes); !bad.empty())
		problems.push_back(bad + "; spawned processes go where the MPI puts them");
	// A process spawned onto a node that joined after the launch learns that node's CPUs here.
	if (auto error = addClusterFileNodes(settings.nodes); !error.empty())
		problems.push_back(error + "; only the nodes of MALLEO_NODES are known");
	if (const char *verbose = environment("MALLEO_PCM_VERBOSE"))
		settings.verbose = std::strcmp(verbose, "0") != 0;
	settings.hugePages = choice("MALLEO_PCM_HUGE_PAGES", "on", "off", 1, problems) == 0;
	// On unless turned off: handing pages over is what makes a reconfiguration faster than copying into fresh memory
	// (docs/notes/shared-blocks.md).
	const std::optional<int> shared = choice("MALLEO_PCM_SHARED_PAGES", "on", "off", 0, problems);
	settings.sharedPages = shared != 1;
	settings.sharedPagesAsked = shared == 0;
	return settings;
}

} // namespace malleo::pcm
