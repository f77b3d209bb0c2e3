// SPDX-License-Identifier: Apache-2.0
// `malleo run`: an MPI program under its launcher with libmalleo_pmpi preloaded into the ranks only (the launcher
// itself stays unprofiled), then where the report went. It does what pmpi_profiler/malleo-pmpi does, plus the
// agent the ranks report to, their places on a virtual cluster, the PCM bridge's mode, and the report its own job
// wrote. docs/cli.md, "malleo run", says it for users.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <malleo/command.h>
#include <malleo/run_dir.h>

#include "agent_client.h"
#include "cluster_file.h"
#include "run_options.h"
#include "failure.h"
#include "launcher.h"
#include "netns_hosts.h"
#include "node_process.h"
#include "program_mpi.h"
#include "reply_fields.h"
#include "run_placement.h"
#include "run_place.h"
#include "run_slurm.h"
#include "target.h"

extern char **environ;

namespace fs = std::filesystem;

namespace malleo::cli {

namespace {

// Far above any launch this tool can make, low enough to read.
constexpr unsigned long kMostRanks = 1000000;

int refuse(int status, const std::string &line)
{
	std::cerr << "malleo run: " << line << '\n';
	return status;
}

// -n and --max: a count of ranks, said in words when it is not one.
std::optional<unsigned> rankCount(const char *option, const std::string &text, std::string &problem)
{
	if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
		problem = fmt::format("{} '{}' is not a number of ranks (a whole number, 1 or more)", option, text);
		return std::nullopt;
	}
	const std::size_t digits = text.find_first_not_of('0');
	if (digits == std::string::npos) {
		problem = fmt::format("{} must be at least 1 (got {})", option, text);
		return std::nullopt;
	}
	if (text.size() - digits > 7 || std::stoul(text.substr(digits)) > kMostRanks) {
		problem = fmt::format("{} {}: more ranks than malleo launches (at most {})", option, text, kMostRanks);
		return std::nullopt;
	}
	return unsigned(std::stoul(text.substr(digits)));
}

// The library beside this malleo in the build tree (cli/malleo -> pmpi_profiler/), else the installed one.
std::optional<std::string> findProfiler(const std::string &mpi, std::string &problem)
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
	problem = fmt::format("cannot find {} in {} or {} (built without {}? see the pmpi_mpis option)", name,
			      tried.front().parent_path().string(), MALLEO_LIBDIR, mpi);
	return std::nullopt;
}

const char *mpiName(const std::string &mpi)
{
	return mpi == "openmpi" ? "Open MPI (libmpi.so.40)" : "MPICH (libmpich.so)";
}

// The MPI of the launcher and the preload: --mpi, checked against what the program is linked with, else that.
// A program linked with none (a script, python3 loading mpi4py) runs only with --mpi.
std::optional<std::string> chooseMpi(const RunOptions &run, std::string &problem)
{
	if (!run.mpi.empty() && run.mpi != "openmpi" && run.mpi != "mpich") {
		problem = fmt::format("--mpi {}: expected openmpi or mpich", run.mpi);
		return std::nullopt;
	}
	const std::string &program = run.command.front();
	const std::optional<ProgramMpi> found = programMpi(program);
	if (!found) {
		if (!run.hosts.empty() && !run.mpi.empty())
			return run.mpi; // it may exist on those hosts alone
		problem = fmt::format("cannot find the program {} (not an executable file{})", program,
				      program.find('/') == std::string::npos ? ", nor in PATH" : "");
		return std::nullopt;
	}
	const std::vector<std::string> &mpis = found->mpis;
	if (run.mpi.empty()) {
		if (mpis.size() == 1)
			return mpis.front();
		problem = mpis.empty() ? fmt::format("{} is linked with no MPI library (ldd lists neither libmpi.so.40 "
						     "nor libmpich.so): if it loads one itself (a script, mpi4py), "
						     "say which with --mpi openmpi or --mpi mpich",
						     program)
				       : fmt::format("{} is linked with both Open MPI and MPICH: say which it uses "
						     "with --mpi openmpi or --mpi mpich",
						     program);
		return std::nullopt;
	}
	if (!mpis.empty() && std::find(mpis.begin(), mpis.end(), run.mpi) == mpis.end()) {
		problem = fmt::format("--mpi {}: {} is linked with {}; leave --mpi out to run it under that MPI",
				      run.mpi, program, mpiName(mpis.front()));
		return std::nullopt;
	}
	return run.mpi;
}

// The PCM bridge's mode: --mode, else the environment's, else pool where spare ranks are launched or nothing can
// spawn (MPICH), else spawn.
std::optional<std::string> chooseMode(const RunOptions &run, const std::string &mpi, std::string &problem,
				     bool srun)
{
	const char *env = std::getenv("MALLEO_PCM_MODE");
	const bool fromEnv = run.mode.empty() && env && *env;
	const std::string said = fromEnv ? fmt::format("MALLEO_PCM_MODE={}", env) : "--mode " + run.mode;
	std::string mode = !run.mode.empty() ? run.mode : fromEnv ? env : "";
	if (mode.empty())
		return !run.maxRanks.empty() || mpi == "mpich" || srun ? "pool" : "spawn";
	if (mode != "pool" && mode != "spawn") {
		problem = fmt::format("{}: expected pool or spawn", said);
		return std::nullopt;
	}
	if (mode == "spawn" && mpi == "mpich") {
		problem = fmt::format("{}: MPICH cannot spawn processes (Debian's is built with UCX); launch spare ranks "
				      "with --max and use pool mode",
				      said);
		return std::nullopt;
	}
	if (mode == "spawn" && srun) {
		problem = fmt::format("{}: processes started by srun have no mpirun to spawn through; launch spare ranks "
				      "with --max and use pool mode (or --launcher mpirun)",
				      said);
		return std::nullopt;
	}
	return mode;
}

// --profile-dir, else the user's MALLEO_PROFILE_DIR, else here; made if missing.
std::optional<fs::path> profileDirectory(const RunOptions &run, std::string &problem)
{
	const char *env = std::getenv("MALLEO_PROFILE_DIR");
	const std::string asked = !run.profileDir.empty() ? run.profileDir : env && *env ? env : ".";
	std::error_code ec;
	fs::path dir = fs::absolute(asked, ec).lexically_normal();
	if (!dir.has_filename()) // "/tmp/." normalises to "/tmp/"
		dir = dir.parent_path();
	const char *said = run.profileDir.empty() ? "MALLEO_PROFILE_DIR" : "--profile-dir";
	if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
		problem = fmt::format("{} {}: not a directory", said, dir.string());
		return std::nullopt;
	}
	if (fs::create_directories(dir, ec); ec) {
		problem = fmt::format("{} {}: cannot make the directory: {}", said, dir.string(), ec.message());
		return std::nullopt;
	}
	return dir;
}

// The id of the agent at `endpoint`, or nullopt when it does not answer. The ranks of a run on this host alone name
// it as their node (MALLEO_NODE): the agents name the nodes of their decisions by agent id, and a rank without
// MALLEO_NODE names its host, which is the agent's id only by default. A split the agent decides onto its own node
// would otherwise find no spare process there.
std::optional<std::string> agentId(const GlobalOptions &options, const std::string &endpoint)
{
	zmq::context_t context(1);
	Failure failure;
	std::unique_ptr<AgentClient> client = AgentClient::create(context, endpoint, options.timeout, failure);
	std::optional<Message> reply = client ? client->request("status", failure) : std::nullopt;
	const nlohmann::json *id = reply ? field(*reply, {"agent", "id"}) : nullptr;
	if (!id || !id->is_string() || id->get<std::string>().empty())
		return std::nullopt;
	return id->get<std::string>();
}

// A name that tells this run's reports from every other's, in the order runs start.
std::string jobTag()
{
	const std::time_t now = std::time(nullptr);
	std::tm local{};
	localtime_r(&now, &local);
	char when[32];
	std::strftime(when, sizeof when, "%Y%m%d-%H%M%S", &local);
	return fmt::format("{}-{}", when, getpid());
}

bool profiling(const std::map<std::string, std::string> &env)
{
	const std::string &mode = env.at("MALLEO_PROFILE");
	return mode != "off" && mode != "0";
}

// The profiler first, so that its MPI_* are the ones the program binds; a user's own preloads follow it, kept. A
// sanitizer's runtime stays before it: ASan refuses to run unless its runtime comes first (STYLE.md rule 20).
std::string preloadWith(const std::string &library, const char *theirs)
{
	std::vector<std::string> first, after;
	std::string word;
	std::istringstream words(theirs ? theirs : "");
	// ld.so separates LD_PRELOAD's entries with colons or spaces.
	while (std::getline(words, word, ':')) {
		std::istringstream spaced(word);
		for (std::string w; spaced >> w;) {
			const std::string name = fs::path(w).filename().string();
			const bool sanitizer = name.starts_with("lib") && name.find("san.so") != std::string::npos;
			(sanitizer ? first : after).push_back(w);
		}
	}
	first.push_back(library);
	first.insert(first.end(), after.begin(), after.end());
	std::string joined;
	for (const std::string &w : first)
		joined += (joined.empty() ? "" : ":") + w;
	return joined;
}

// What every rank gets: each MALLEO_ variable of this environment, then the preload and what this run decides.
std::map<std::string, std::string> rankEnvironment(const std::string &library, const fs::path &profileDir,
						   const std::string &tag, const std::string &mode)
{
	std::map<std::string, std::string> env;
	for (char **e = environ; *e; ++e) {
		const std::string entry = *e;
		const std::size_t equals = entry.find('=');
		if (entry.starts_with("MALLEO_") && equals != std::string::npos)
			env[entry.substr(0, equals)] = entry.substr(equals + 1);
	}
	if (env["MALLEO_PROFILE"].empty())
		env["MALLEO_PROFILE"] = "full";
	env["LD_PRELOAD"] = preloadWith(library, std::getenv("LD_PRELOAD"));
	env["MALLEO_PROFILE_ANNOUNCE"] = "off"; // runCommand names the reports, once
	env["MALLEO_PROFILE_DIR"] = profileDir.string();
	env["MALLEO_JOB_TAG"] = tag;
	env["MALLEO_PCM_MODE"] = mode;
	return env;
}

// The reports this run's jobs wrote: malleo-profile-<app>-<tag>.json, and .rank<N> and .spawn<job> after the tag.
std::vector<fs::path> reportsOf(const fs::path &dir, const std::string &tag)
{
	std::vector<fs::path> found;
	std::error_code ec;
	for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
		const std::string name = e.path().filename().string();
		if (!name.starts_with("malleo-profile-") || !name.ends_with(".json"))
			continue;
		const std::string stem = name.substr(0, name.size() - 5);
		const std::size_t at = stem.find("-" + tag);
		const std::size_t after = at + tag.size() + 1;
		if (at != std::string::npos && (after == stem.size() || stem[after] == '.'))
			found.push_back(e.path());
	}
	std::sort(found.begin(), found.end());
	return found;
}

// Whether the ranks' hosts are given (--hosts, or the launcher's own options).
bool hostsGiven(const RunOptions &run)
{
	if (!run.hosts.empty())
		return true;
	for (const std::string &option : run.launcherOptions)
		for (const char *hosts : {"--host", "-host", "-H", "--hostfile", "-hostfile", "--machinefile", "-machinefile",
					  "-hosts", "-f"})
			if (option == hosts || option.starts_with(std::string(hosts) + "="))
				return true;
	return false;
}

// Inside a Slurm allocation, unless the ranks' hosts are given otherwise.
bool insideSlurmAllocation(const RunOptions &run)
{
	const char *nodes = std::getenv("SLURM_JOB_NODELIST");
	return nodes && *nodes && !hostsGiven(run);
}

// What the command line chose, checked: the counts of ranks, the MPI, the launcher and the bridge's mode.
struct RunChoice {
	unsigned ranks = 0;
	std::optional<unsigned> maxRanks; // --max: the pool, the active ranks and the parked ones
	std::string mpi;
	bool srun = false;
	std::string mode;
};

// The command line checked before anything starts: nothing, or the exit status of the refusal it said.
std::optional<int> chooseRun(const RunOptions &run, RunChoice &choice)
{
	std::string problem;
	const std::optional<unsigned> ranks = rankCount("-n", run.ranks, problem);
	if (!ranks)
		return refuse(kExitBadInput, problem);
	choice.ranks = *ranks;
	if (!run.maxRanks.empty() && !(choice.maxRanks = rankCount("--max", run.maxRanks, problem)))
		return refuse(kExitBadInput, problem);
	if (choice.maxRanks && *choice.maxRanks < *ranks)
		return refuse(kExitBadInput, fmt::format("--max {} is below -n {}: the pool holds the active ranks and "
							 "the parked ones",
							 *choice.maxRanks, *ranks));
	if (run.command.empty())
		return refuse(kExitBadInput, "no program to run (malleo run -n N -- PROGRAM ARGS)");
	// The bridge refuses a malformed schedule too, but only once every rank has started: say it before that.
	if (const char *force = std::getenv("MALLEO_FORCE")) {
		std::map<std::int64_t, malleo::Command> schedule;
		if (std::string bad = malleo::parseForcedSchedule(force, schedule); !bad.empty())
			return refuse(kExitBadInput, bad + " (fix or unset MALLEO_FORCE; grammar in docs/pcm-api.md)");
	}
	const std::optional<std::string> mpi = chooseMpi(run, problem);
	if (!mpi)
		return refuse(kExitBadInput, problem);
	choice.mpi = *mpi;
	choice.srun = run.launcher == "srun";
	if (!run.launcher.empty() && !choice.srun && run.launcher != "mpirun")
		return refuse(kExitBadInput, fmt::format("--launcher {}: expected mpirun or srun", run.launcher));
	if (choice.srun && !std::getenv("SLURM_JOB_NODELIST"))
		return refuse(kExitBadInput, "--launcher srun: not inside a Slurm allocation (no SLURM_JOB_NODELIST); run "
					     "it in salloc or sbatch");
	const std::optional<std::string> mode = chooseMode(run, choice.mpi, problem, choice.srun);
	if (!mode)
		return refuse(kExitBadInput, problem);
	choice.mode = *mode;
	return std::nullopt;
}

// The blocks of ranks and what each is told: on a virtual cluster's nodes, on a Slurm allocation's, or one block
// (told the agent's node when nothing else says it). Nothing, or the exit status of the refusal it said.
std::optional<int> placeBlocks(const GlobalOptions &options, const RunOptions &run, const RunChoice &choice,
			       const RunPlace &place, std::map<std::string, std::string> &env,
			       std::vector<RankBlock> &blocks)
{
	const RankTarget &target = place.target;
	const unsigned launched = choice.maxRanks ? *choice.maxRanks : choice.ranks;
	blocks = {{launched, {}, {}, {}}};
	if (target.cluster) {
		ClusterFile cluster = *target.cluster;
		cluster.nodes.insert(cluster.nodes.end(), place.nodesToCome.begin(), place.nodesToCome.end());
		for (const auto &[key, value] : clusterEnvironment(target.clusterDir, cluster))
			env[key] = value;
		// Each block says its own node and agent.
		env.erase("MALLEO_NODE");
		env.erase("MALLEO_AGENT");
		blocks = placeRanks(cluster, *cluster.find(target.node), choice.ranks, launched - choice.ranks,
				    place.spareNodes, place.activeNodes);
	} else if (insideSlurmAllocation(run)) {
		std::string problem;
		const std::optional<std::vector<std::string>> nodes = slurmNodes(problem);
		if (!nodes)
			return refuse(kExitFailed, problem);
		// Each block says its own node, and its own agent where the agents' endpoint names the node (%n).
		env.erase("MALLEO_NODE");
		env.erase("MALLEO_AGENT");
		blocks = placeOnSlurmNodes(*nodes, choice.ranks, launched - choice.ranks, target.agent);
	} else if (!hostsGiven(run) && !target.agent.empty() && !std::getenv("MALLEO_NODE")) {
		if (std::optional<std::string> id = agentId(options, target.agent))
			env["MALLEO_NODE"] = *id;
	}
	return std::nullopt;
}

// A virtual cluster of hosts: its network, the hosts the bridge may spawn onto and, for Open MPI's several blocks,
// the rankfile. Nothing, or the exit status of the refusal it said.
std::optional<int> useClusterHosts(const RunOptions &run, const RankTarget &target, const std::string &tag,
				   LaunchPlan &plan)
{
	if (!run.hosts.empty())
		return refuse(kExitBadInput, fmt::format("--hosts {}: the cluster at {} places the ranks on its own "
							 "hosts (each node's); leave --hosts out",
							 run.hosts, target.clusterDir));
	Failure none;
	plan.network = readHostNetwork(target.clusterDir, none);
	if (!plan.network)
		return refuse(kExitFailed, fmt::format("the cluster at {} has hosts but no hosts.json ({}); start it "
						       "again with `malleo cluster down` and `cluster up --hosts`",
						       target.clusterDir, none.line.empty() ? "gone" : none.line));
	// The hosts this job can reach, for the bridge to refuse a spawn onto any other.
	std::string reachable;
	for (const NetHost &host : plan.network->hosts)
		reachable += (reachable.empty() ? "" : ",") + host.name;
	plan.env.emplace_back("MALLEO_HOSTS", reachable);
	if (plan.mpi == "openmpi" && plan.blocks.size() > 1) {
		plan.rankfile = (fs::path(target.clusterDir) / "hosts" / ("rankfile-" + tag)).string();
		if (std::optional<Failure> f = writeRankfile(plan.rankfile, plan.blocks))
			return refuse(f->status, f->line);
	}
	return std::nullopt;
}

// After the launcher: the reports this run's jobs wrote, named once (and as JSON with --json).
void tellReports(const RunOptions &run, bool profiled, const fs::path &profileDir, const std::string &tag,
		 int status)
{
	const std::vector<fs::path> reports = reportsOf(profileDir, tag);
	if (reports.empty() && profiled)
		std::cerr << fmt::format("malleo run: no profile report was written to {} (exit status {})\n",
					 profileDir.string(), status);
	nlohmann::json named = nlohmann::json::array();
	for (const fs::path &r : reports) {
		fs::path summary = r;
		summary.replace_extension(".txt");
		named.push_back({{"json", r.string()}, {"summary", summary.string()}});
		// The path once: the summary is the .txt beside it.
		std::cerr << fmt::format("malleo: report {} (summary: .txt beside it; view with `malleo report FILE`)\n",
					 r.string());
	}
	if (run.json) {
		nlohmann::json result = {{"status", status}, {"reports", named},
					 {"profile_dir", profileDir.string()}, {"tag", tag}};
		std::cout << result.dump() << std::endl;
	}
}

} // namespace

int runCommand(const GlobalOptions &options, const RunOptions &run)
{
	RunChoice choice;
	if (std::optional<int> refused = chooseRun(run, choice))
		return *refused;
	Failure failure;
	const std::optional<RunPlace> place = runPlace(options, run, failure);
	if (!place)
		return refuse(failure.status, failure.line);
	std::string problem;
	const std::optional<std::string> library = findProfiler(choice.mpi, problem);
	if (!library)
		return refuse(kExitFailed, problem);
	const std::optional<fs::path> profileDir = profileDirectory(run, problem);
	if (!profileDir)
		return refuse(kExitBadInput, problem);

	const RankTarget &target = place->target;
	const std::string tag = jobTag();
	std::map<std::string, std::string> env = rankEnvironment(*library, *profileDir, tag, choice.mode);
	if (choice.maxRanks)
		env["MALLEO_POOL_ACTIVE"] = std::to_string(choice.ranks);
	if (!target.agent.empty())
		env["MALLEO_AGENT"] = target.agent;
	std::vector<RankBlock> blocks;
	if (std::optional<int> refused = placeBlocks(options, run, choice, *place, env, blocks))
		return *refused;
	LaunchPlan plan{choice.mpi, choice.srun, run.hosts, run.launcherOptions, {env.begin(), env.end()}, blocks,
			run.command, {}, {}};
	if (target.cluster && !target.cluster->nodes.empty() && !target.cluster->nodes.front().host.empty())
		if (std::optional<int> refused = useClusterHosts(run, target, tag, plan))
			return *refused;
	const std::optional<LaunchEnd> end =
		runLauncher(launcherCommand(plan), failure, plan.network ? &plan.network->launch : nullptr,
			    choice.mpi != "mpich"); // hydra gives its TMPDIR to every rank
	if (!end)
		return refuse(failure.status, failure.line);

	if (!plan.rankfile.empty()) {
		std::error_code ec;
		fs::remove(plan.rankfile, ec);
	}
	tellReports(run, profiling(env), *profileDir, tag, end->status);
	return end->status;
}

} // namespace malleo::cli
