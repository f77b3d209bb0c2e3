// SPDX-License-Identifier: Apache-2.0
#include "launcher.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace malleo::cli {

namespace {

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

bool userOption(const LaunchPlan &plan, std::initializer_list<const char *> names)
{
	return std::any_of(plan.options.begin(), plan.options.end(), [&](const std::string &option) {
		return std::any_of(names.begin(), names.end(), [&](const char *name) {
			return option == name || option.starts_with(std::string(name) + "=");
		});
	});
}

bool userMcaParameter(const LaunchPlan &plan, const std::string &parameter)
{
	for (std::size_t i = 0; i + 1 < plan.options.size(); ++i)
		if ((plan.options[i] == "--mca" || plan.options[i] == "-mca") && plan.options[i + 1] == parameter)
			return true;
	return false;
}

// Open MPI's point-to-point layer for a run on this host alone, unless the user chose one: on a host without
// InfiniBand or Omni-Path devices it picks ob1 anyway, but only after trying the cm layer, whose Omni-Path
// libraries (Debian links libpsm2 and libinfinipath) sleep about 0.1 s each while they load: 0.2 s of every
// process's MPI_Init and of every spawn (docs/notes/open-mpi-pml.md). Open MPI refuses a parameter given twice.
bool chooseOb1(const LaunchPlan &plan)
{
	const char *chosen = std::getenv("OMPI_MCA_pml");
	const bool otherHosts = !plan.hosts.empty() ||
				std::any_of(plan.blocks.begin(), plan.blocks.end(),
					    [](const RankBlock &block) { return !block.host.empty(); }) ||
				userOption(plan, {"--host", "-host", "-H", "--hostfile", "-hostfile", "--machinefile",
						  "-machinefile", "--default-hostfile"});
	return !otherHosts && !(chosen && *chosen) && !userMcaParameter(plan, "pml") && !hasFastNetworkDevice();
}

std::vector<std::string> openMpiCommand(const LaunchPlan &plan)
{
	std::vector<std::string> argv = {"mpirun.openmpi"};
	if (geteuid() == 0)
		argv.push_back("--allow-run-as-root");
	argv.push_back("--oversubscribe");
	if (chooseOb1(plan))
		argv.insert(argv.end(), {"--mca", "pml", "ob1"});
	if (plan.network) {
		// Unbound: Open MPI would pin the ranks of every host to core 0 (the bridge binds them to their node's
		// CPUs); its daemons and TCP on the cluster's subnet alone, since each host's loopback is its own.
		const std::string subnet = plan.network->subnet();
		argv.insert(argv.end(), {"--hostfile", plan.network->hostfile, "--mca", "plm_rsh_agent",
					 plan.network->rshAgent, "--mca", "oob_tcp_if_include", subnet, "--mca",
					 "btl_tcp_if_include", subnet});
		if (plan.rankfile.empty())
			argv.insert(argv.end(), {"--bind-to", "none"});
		else
			argv.insert(argv.end(), {"--rankfile", plan.rankfile});
	}
	argv.insert(argv.end(), plan.options.begin(), plan.options.end());
	// Open MPI's -x and --host belong to the block they are given in: every block gets them all.
	for (const RankBlock &block : plan.blocks) {
		if (&block != &plan.blocks.front())
			argv.push_back(":");
		argv.insert(argv.end(), {"-n", std::to_string(block.ranks)});
		if (plan.network && !block.host.empty()) {
			if (plan.rankfile.empty()) {
				// The block's host first, with its ranks' slots (Open MPI fills the list in order); then every
				// other host: only the hosts of a job's app contexts can get its spawned processes.
				std::string list = fmt::format("{}:{}", block.host, block.ranks);
				for (const NetHost &host : plan.network->hosts)
					if (host.name != block.host)
						list += fmt::format(",{}:1", host.name);
				argv.insert(argv.end(), {"--host", list});
			}
		} else if (!block.host.empty() || !plan.hosts.empty()) {
			argv.insert(argv.end(), {"--host", block.host.empty() ? plan.hosts : block.host});
		}
		for (const auto &[key, value] : plan.env)
			argv.insert(argv.end(), {"-x", key + "=" + value});
		for (const auto &[key, value] : block.env)
			argv.insert(argv.end(), {"-x", key + "=" + value});
		argv.insert(argv.end(), plan.command.begin(), plan.command.end());
	}
	return argv;
}

std::vector<std::string> mpichCommand(const LaunchPlan &plan)
{
	std::vector<std::string> argv = {"mpiexec.mpich"};
	if (plan.network) {
		// Hydra's -hosts is global: the blocks' hosts in order, each with its block's count, place rank by rank.
		std::string list;
		for (const RankBlock &block : plan.blocks)
			list += fmt::format("{}{}:{}", list.empty() ? "" : ",", block.host, block.ranks);
		argv.insert(argv.end(), {"-launcher", "ssh", "-launcher-exec", plan.network->rshAgent, "-iface", "eth0",
					 "-genv", "UCX_TLS", "tcp,self"});
		if (plan.hosts.empty())
			argv.insert(argv.end(), {"-hosts", list});
	}
	for (const auto &[key, value] : plan.env)
		argv.insert(argv.end(), {"-genv", key, value});
	argv.insert(argv.end(), plan.options.begin(), plan.options.end());
	for (const RankBlock &block : plan.blocks) {
		if (&block != &plan.blocks.front())
			argv.push_back(":");
		argv.insert(argv.end(), {"-n", std::to_string(block.ranks)});
		// On a cluster's hosts the global list above places every block: hydra refuses a second -hosts
		// ("duplicate host file or host list setting").
		if (!plan.network && (!block.host.empty() || !plan.hosts.empty()))
			argv.insert(argv.end(), {"-hosts", block.host.empty() ? plan.hosts : block.host});
		for (const auto &[key, value] : block.env)
			argv.insert(argv.end(), {"-env", key, value});
		argv.insert(argv.end(), plan.command.begin(), plan.command.end());
	}
	return argv;
}

std::string shellQuoted(const std::string &text)
{
	std::string out = "'";
	for (char c : text)
		out += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return out + "'";
}

// srun starts every rank alike, so what differs between blocks is said by a small sh script each rank runs first: by
// its rank (SLURM_PROCID), its block's variables, then the variables of all, then the program. The preload is set
// there too, so that neither srun nor sh is profiled. With hosts per block, srun places rank i on the i-th node of
// its --nodelist (--distribution=arbitrary).
std::vector<std::string> srunCommand(const LaunchPlan &plan)
{
	unsigned total = 0;
	std::string nodes, cases;
	for (const RankBlock &block : plan.blocks) {
		std::string ranks, exports;
		for (unsigned r = 0; r < block.ranks; ++r) {
			ranks += fmt::format("{}{}", r ? "|" : "", total + r);
			if (!block.host.empty())
				nodes += (nodes.empty() ? "" : ",") + block.host;
		}
		for (const auto &[key, value] : block.env)
			exports += fmt::format(" {}={}", key, shellQuoted(value));
		if (!exports.empty())
			cases += fmt::format("{}) export{};; ", ranks, exports);
		total += block.ranks;
	}
	std::string script = cases.empty() ? std::string() : fmt::format("case \"$SLURM_PROCID\" in {}esac; ", cases);
	for (const auto &[key, value] : plan.env)
		script += fmt::format("export {}={}; ", key, shellQuoted(value));
	script += "exec \"$@\"";
	std::vector<std::string> argv = {"srun", plan.mpi == "openmpi" ? "--mpi=pmix" : "--mpi=pmi2", "-n",
					 std::to_string(total)};
	if (!nodes.empty())
		argv.insert(argv.end(), {"--distribution=arbitrary", "--nodelist=" + nodes});
	else if (!plan.hosts.empty())
		argv.push_back("--nodelist=" + plan.hosts);
	argv.insert(argv.end(), plan.options.begin(), plan.options.end());
	argv.insert(argv.end(), {"/bin/sh", "-c", script, "malleo-rank"});
	argv.insert(argv.end(), plan.command.begin(), plan.command.end());
	return argv;
}

} // namespace

std::optional<Failure> writeRankfile(const std::string &path, const std::vector<RankBlock> &blocks)
{
	std::ofstream out(path, std::ios::trunc);
	unsigned rank = 0;
	for (const RankBlock &block : blocks)
		for (unsigned i = 0; i < block.ranks; ++i, ++rank)
			out << fmt::format("rank {}={} slot={}\n", rank, block.host,
					   block.cpus.empty() ? std::string("0") : fmt::format("{}", fmt::join(block.cpus, ",")));
	if (!out.flush())
		return Failure{kExitFailed, fmt::format("cannot write {}", path)};
	return std::nullopt;
}

std::vector<std::string> launcherCommand(const LaunchPlan &plan)
{
	if (plan.srun)
		return srunCommand(plan);
	return plan.mpi == "openmpi" ? openMpiCommand(plan) : mpichCommand(plan);
}

std::optional<LaunchEnd> runLauncher(const std::vector<std::string> &argv, Failure &failure, const NetHost *host,
				     bool hostTmpdir)
{
	std::optional<HostEntry> entry;
	if (host) {
		entry.emplace(*host, hostTmpdir);
		if (!entry->opened()) {
			failure = {kExitFailed, entry->openError() + " (is the cluster up?)"};
			return std::nullopt;
		}
	}
	std::vector<char *> args;
	for (const std::string &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);

	// Blocked before the fork and taken with sigwaitinfo: a signal that comes while the launcher starts is not lost,
	// and the launcher's end (SIGCHLD) and a signal to pass on are awaited alike, without a handler.
	sigset_t awaited, previous;
	sigemptyset(&awaited);
	for (int sig : {SIGINT, SIGTERM, SIGCHLD})
		sigaddset(&awaited, sig);
	sigprocmask(SIG_BLOCK, &awaited, &previous);
	const pid_t pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &previous, nullptr);
		failure = {kExitFailed, fmt::format("cannot start {}: {}", argv[0], std::strerror(errno))};
		return std::nullopt;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &previous, nullptr);
		if (entry)
			if (int err = entry->enter(); err != 0) {
				std::cerr << fmt::format("malleo run: cannot enter the host {}: {}\n", host->name,
							 std::strerror(err));
				_exit(127);
			}
		execvp(args[0], args.data());
		std::cerr << fmt::format("malleo run: cannot run {}: {} (is that MPI installed?)\n", argv[0],
					 std::strerror(errno));
		_exit(127);
	}
	LaunchEnd end;
	int status = 0;
	for (;;) {
		siginfo_t info{};
		const int sig = sigwaitinfo(&awaited, &info);
		if (sig == SIGCHLD) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				break;
			continue;
		}
		if (sig != SIGINT && sig != SIGTERM)
			continue; // EINTR
		if (end.signal == 0)
			end.signal = sig;
		// The terminal's Ctrl-C went to the whole foreground process group, the launcher included.
		if (info.si_code != SI_KERNEL)
			kill(pid, sig);
	}
	sigprocmask(SIG_SETMASK, &previous, nullptr);
	if (end.signal)
		end.status = 128 + end.signal;
	else
		end.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return end;
}

} // namespace malleo::cli
