// SPDX-License-Identifier: Apache-2.0
#include "node_process.h"

#include "netns_hosts.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

bool executable(const fs::path &path)
{
	std::error_code ec;
	return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// The fields of /proc/<pid>/stat after the command name, which may hold spaces
// and parentheses; empty when the process does not exist.
std::vector<std::string> statFields(long pid)
{
	std::ifstream in(fmt::format("/proc/{}/stat", pid));
	std::string line;
	if (!in || !std::getline(in, line))
		return {};
	auto close = line.rfind(')');
	if (close == std::string::npos)
		return {};
	std::istringstream rest(line.substr(close + 1));
	std::vector<std::string> fields;
	for (std::string f; rest >> f;)
		fields.push_back(f);
	return fields; // fields[0] is the state (field 3), fields[19] the start time (field 22)
}

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void execChild(char *const argv[], const cpu_set_t &set, int logFd, int nullFd, int errorPipe,
			       const HostEntry *host)
{
	setsid();
	int err = host ? host->enter() : 0;
	if (!err && sched_setaffinity(0, sizeof(set), &set) != 0)
		err = errno;
	if (!err && (dup2(nullFd, STDIN_FILENO) < 0 || dup2(logFd, STDOUT_FILENO) < 0 ||
		     dup2(logFd, STDERR_FILENO) < 0))
		err = errno;
	if (!err) {
		// The agent handles these itself; do not pass on what the CLI blocked.
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, nullptr);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		err = errno;
	}
	ssize_t ignored = write(errorPipe, &err, sizeof(err));
	(void)ignored;
	_exit(127);
}

} // namespace

std::optional<std::string> findMalleod(Failure &failure)
{
	if (const char *env = std::getenv("MALLEOD"); env && *env) {
		if (executable(env))
			return std::string(env);
		failure = {kExitBadInput, fmt::format("MALLEOD={} is not an executable file", env)};
		return std::nullopt;
	}
	std::vector<fs::path> tried;
	std::error_code ec;
	fs::path self = fs::read_symlink("/proc/self/exe", ec);
	if (!ec) {
		fs::path dir = self.parent_path();
		tried = {dir / ".." / "agent" / "daemon" / "malleod", dir / "malleod"};
	}
	if (const char *path = std::getenv("PATH")) {
		std::istringstream dirs(path);
		for (std::string dir; std::getline(dirs, dir, ':');)
			if (!dir.empty())
				tried.push_back(fs::path(dir) / "malleod");
	}
	for (const fs::path &candidate : tried)
		if (executable(candidate))
			return fs::weakly_canonical(candidate, ec).string();
	failure = {kExitFailed, fmt::format("cannot find malleod beside {} or on the PATH; "
					    "set MALLEOD=/path/to/malleod",
					    self.empty() ? std::string("malleo") : self.string())};
	return std::nullopt;
}

std::vector<int> usableCpus()
{
	std::vector<int> cpus;
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
			if (CPU_ISSET(cpu, &set))
				cpus.push_back(cpu);
	if (cpus.empty())
		cpus.push_back(0);
	return cpus;
}

std::vector<int> defaultNodeCpus(unsigned index)
{
	const std::vector<int> cpus = usableCpus();
	return {cpus[(index - 1) % cpus.size()]};
}

std::optional<pid_t> spawnDetached(const std::vector<std::string> &argv, const std::vector<int> &cpus,
				   const std::string &logPath, Failure &failure, const HostEntry *host)
{
	int logFd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (logFd < 0) {
		failure = {kExitFailed, fmt::format("cannot write {}: {}", logPath, std::strerror(errno))};
		return std::nullopt;
	}
	int nullFd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int errorPipe[2];
	if (nullFd < 0 || pipe2(errorPipe, O_CLOEXEC) != 0) {
		failure = {kExitFailed, fmt::format("cannot start {}: {}", argv[0], std::strerror(errno))};
		close(logFd);
		if (nullFd >= 0)
			close(nullFd);
		return std::nullopt;
	}

	// Everything the child needs is built before fork: it may not allocate.
	std::vector<char *> args;
	for (const std::string &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int cpu : cpus)
		if (cpu >= 0 && cpu < CPU_SETSIZE)
			CPU_SET(cpu, &set);

	pid_t pid = fork();
	if (pid == 0)
		execChild(args.data(), set, logFd, nullFd, errorPipe[1], host);
	int forkErrno = errno;
	close(errorPipe[1]);
	close(logFd);
	close(nullFd);
	if (pid < 0) {
		close(errorPipe[0]);
		failure = {kExitFailed, fmt::format("cannot start {}: {}", argv[0], std::strerror(forkErrno))};
		return std::nullopt;
	}

	// The pipe closes on a successful exec; otherwise it carries the errno.
	int childErrno = 0;
	ssize_t n;
	do
		n = read(errorPipe[0], &childErrno, sizeof(childErrno));
	while (n < 0 && errno == EINTR);
	close(errorPipe[0]);
	if (n == sizeof(childErrno)) {
		waitpid(pid, nullptr, 0);
		failure = {kExitFailed, fmt::format("cannot start {} on CPU {}: {}", argv[0], fmt::join(cpus, ","),
						    std::strerror(childErrno))};
		return std::nullopt;
	}
	return pid;
}

unsigned long long processStartTime(long pid)
{
	std::vector<std::string> fields = statFields(pid);
	return fields.size() > 19 ? std::strtoull(fields[19].c_str(), nullptr, 10) : 0;
}

bool processRuns(long pid, unsigned long long startTime)
{
	if (pid <= 0)
		return false;
	std::vector<std::string> fields = statFields(pid);
	if (fields.size() <= 19 || fields[0] == "Z" || fields[0] == "X")
		return false;
	return startTime == 0 || std::strtoull(fields[19].c_str(), nullptr, 10) == startTime;
}

std::string reapChild(pid_t pid)
{
	int status = 0;
	if (waitpid(pid, &status, WNOHANG) != pid)
		return {};
	if (WIFEXITED(status))
		return fmt::format("exit status {}", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
	return "ended";
}

} // namespace malleo::cli
