// SPDX-License-Identifier: Apache-2.0
// `malleo run`: an MPI program under its launcher with libmalleo_pmpi preloaded
// into the ranks only (the launcher itself stays unprofiled), then where the
// report went. It does what pmpi_profiler/malleo-pmpi does, plus hosts, the
// agent endpoint and finding the report afterwards.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <malleo/run_dir.h>

#include "commands.h"
#include "failure.h"
#include "target.h"

namespace fs = std::filesystem;

namespace malleo::cli {

namespace {

// The library beside this malleo in the build tree (cli/malleo -> pmpi_profiler/), else the
// installed one.
std::optional<std::string> findProfiler(const std::string &mpi, Failure &failure)
{
	const std::string name = "libmalleo_pmpi_" + mpi + ".so";
	std::vector<fs::path> tried;
	std::error_code ec;
	const fs::path self = fs::read_symlink("/proc/self/exe", ec);
	if (!ec)
		tried.push_back(self.parent_path() / ".." / "pmpi_profiler" / name);
	tried.push_back(fs::path(MALLEO_LIBDIR) / name);
	for (const fs::path &candidate : tried)
		if (fs::exists(candidate, ec))
			return fs::weakly_canonical(candidate, ec).string();
	failure = {kExitFailed, fmt::format("cannot find {} in {} or {} (built without {}? see the "
					    "pmpi_mpis option)",
					    name, tried.front().parent_path().string(), MALLEO_LIBDIR,
					    mpi)};
	return std::nullopt;
}

// The agent the ranks report to: the one every other command would talk to (--agent, --node, MALLEO_AGENT, else the
// default agent, else the virtual cluster's first node). Empty when only the default is left: the profiler finds it
// by the same rule when it runs, and a run without any agent is a profile alone. Nullopt with the failure said when
// an explicit choice names no agent (an unknown --node).
std::optional<std::string> rankAgent(const GlobalOptions &options, Failure &failure)
{
	const bool chosen = !options.agent.empty() || !options.node.empty() || std::getenv("MALLEO_AGENT");
	std::optional<Target> target = singleTarget(options, failure);
	if (!target)
		return chosen ? std::nullopt : std::optional<std::string>(std::string());
	if (!chosen && target->endpoint == defaultAgentEndpoint())
		return std::string();
	return target->endpoint;
}

// What the ranks get: the preload and the MALLEO_ switches that concern them.
std::vector<std::pair<std::string, std::string>> rankEnvironment(const std::string &agent,
								 const std::string &library,
								 const std::string &profileDir)
{
	const char *mode = std::getenv("MALLEO_PROFILE");
	std::vector<std::pair<std::string, std::string>> env = {
	    {"LD_PRELOAD", library},
	    {"MALLEO_PROFILE", mode && *mode ? mode : "full"},
	    {"MALLEO_PROFILE_DIR", profileDir}};
	if (!agent.empty())
		env.emplace_back("MALLEO_AGENT", agent);
	if (const char *interval = std::getenv("MALLEO_REPORT_INTERVAL"))
		env.emplace_back("MALLEO_REPORT_INTERVAL", interval);
	if (const char *interval = std::getenv("MALLEO_POLL_INTERVAL"))
		env.emplace_back("MALLEO_POLL_INTERVAL", interval);
	return env;
}

// Pool mode (docs/pcm-api.md): --max ranks are launched and the PCM bridge keeps -n of them active.
void addPool(const RunOptions &run, std::vector<std::pair<std::string, std::string>> &env)
{
	if (run.maxRanks > 0)
		env.emplace_back("MALLEO_POOL_ACTIVE", std::to_string(run.ranks));
}

unsigned launched(const RunOptions &run)
{
	return run.maxRanks > 0 ? run.maxRanks : run.ranks;
}

// Whether this host has an InfiniBand or Omni-Path (PSM) device, for which Open MPI has transports besides ob1.
bool hasFastNetworkDevice()
{
	std::error_code ec;
	if (fs::exists("/dev/infiniband", ec))
		return true;
	for (const fs::directory_entry &e : fs::directory_iterator("/dev", ec)) {
		const std::string name = e.path().filename().string();
		if (name.starts_with("hfi1") || name.starts_with("ipath"))
			return true;
	}
	return false;
}

// Open MPI's point-to-point layer for a run on this host alone, unless the user chose one: on a host without
// InfiniBand or Omni-Path devices it picks ob1 anyway, but only after trying the cm layer, whose Omni-Path
// libraries (Debian links libpsm2 and libinfinipath) sleep about 0.1 s each while they load: 0.2 s of every
// process's MPI_Init and of every spawn (docs/notes/open-mpi-pml.md).
bool chooseOb1(const RunOptions &run)
{
	const char *chosen = std::getenv("OMPI_MCA_pml");
	return run.hosts.empty() && !(chosen && *chosen) && !hasFastNetworkDevice();
}

std::vector<std::string> launcherCommand(const RunOptions &run,
					 const std::vector<std::pair<std::string, std::string>> &env)
{
	std::vector<std::string> argv;
	if (run.mpi == "openmpi") {
		argv = {"mpirun.openmpi"};
		if (geteuid() == 0)
			argv.push_back("--allow-run-as-root");
		argv.insert(argv.end(), {"--oversubscribe", "-n", std::to_string(launched(run))});
		if (chooseOb1(run))
			argv.insert(argv.end(), {"--mca", "pml", "ob1"});
		if (!run.hosts.empty())
			argv.insert(argv.end(), {"--host", run.hosts});
		for (const auto &[key, value] : env)
			argv.insert(argv.end(), {"-x", key + "=" + value});
	} else {
		argv = {"mpiexec.mpich", "-n", std::to_string(launched(run))};
		if (!run.hosts.empty())
			argv.insert(argv.end(), {"-hosts", run.hosts});
		for (const auto &[key, value] : env)
			argv.insert(argv.end(), {"-genv", key, value});
	}
	argv.insert(argv.end(), run.command.begin(), run.command.end());
	return argv;
}

// Runs argv and returns its exit status the way a shell reports it (128 + signal).
int runLauncher(const std::vector<std::string> &argv, Failure &failure)
{
	std::vector<char *> args;
	for (const std::string &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	const pid_t pid = fork();
	if (pid < 0) {
		failure = {kExitFailed, fmt::format("cannot start {}: {}", argv[0], std::strerror(errno))};
		return -1;
	}
	if (pid == 0) {
		execvp(args[0], args.data());
		std::cerr << fmt::format("malleo: cannot run {}: {} (is that MPI installed?)\n", argv[0],
					 std::strerror(errno));
		_exit(127);
	}
	// Ctrl-C reaches the launcher through the terminal's process group; malleo waits to say
	// where the report went.
	std::signal(SIGINT, SIG_IGN);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	std::signal(SIGINT, SIG_DFL);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The reports this run wrote: malleo-profile-<program>-*.json newer than its start.
std::vector<fs::path> reportsSince(const fs::path &dir, const std::string &program,
				   fs::file_time_type start)
{
	const std::string prefix = "malleo-profile-" + fs::path(program).filename().string() + "-";
	std::vector<fs::path> found;
	std::error_code ec;
	for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
		const std::string name = e.path().filename().string();
		if (name.starts_with(prefix) && name.ends_with(".json") &&
		    e.last_write_time(ec) >= start)
			found.push_back(e.path());
	}
	std::sort(found.begin(), found.end());
	return found;
}

} // namespace

int runCommand(const GlobalOptions &options, const RunOptions &run)
{
	if (run.mpi != "openmpi" && run.mpi != "mpich")
		return report({kExitBadInput, fmt::format("--mpi {}: expected openmpi or mpich", run.mpi)});
	if (run.command.empty())
		return report({kExitBadInput, "no program to run (malleo run -n N -- PROGRAM ARGS)"});
	if (run.maxRanks > 0 && run.maxRanks < run.ranks)
		return report({kExitBadInput, fmt::format("--max {} is below -n {}: the pool holds the "
							  "active ranks and the parked ones",
							  run.maxRanks, run.ranks)});
	Failure failure;
	const std::optional<std::string> library = findProfiler(run.mpi, failure);
	if (!library)
		return report(failure);
	std::error_code ec;
	fs::path profileDir =
	    fs::absolute(run.profileDir.empty() ? "." : run.profileDir, ec).lexically_normal();
	if (!profileDir.has_filename()) // "/tmp/." normalises to "/tmp/"
		profileDir = profileDir.parent_path();
	if (!fs::is_directory(profileDir, ec))
		return report({kExitBadInput,
			       fmt::format("--profile-dir {}: not a directory", profileDir.string())});

	// A second of slack: file times may be coarser than the clock.
	const auto start = fs::file_time_type::clock::now() - std::chrono::seconds(1);
	const std::optional<std::string> agent = rankAgent(options, failure);
	if (!agent)
		return report(failure);
	std::vector<std::pair<std::string, std::string>> env = rankEnvironment(*agent, *library, profileDir);
	addPool(run, env);
	const int status = runLauncher(launcherCommand(run, env), failure);
	if (status < 0)
		return report(failure);

	const std::vector<fs::path> reports = reportsSince(profileDir, run.command.front(), start);
	if (reports.empty())
		std::cerr << fmt::format("malleo: no profile report was written to {} (exit status {})\n",
					 profileDir.string(), status);
	for (const fs::path &r : reports) {
		fs::path summary = r;
		summary.replace_extension(".txt");
		std::cerr << fmt::format("malleo: report {} (summary {}; view with `malleo report {}`)\n",
					 r.string(), summary.string(), r.string());
	}
	return status;
}

} // namespace malleo::cli
