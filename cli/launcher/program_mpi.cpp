// SPDX-License-Identifier: Apache-2.0
#include "program_mpi.h"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace malleo::cli {

namespace {

std::optional<std::string> findProgram(const std::string &program)
{
	if (program.find('/') != std::string::npos)
		return access(program.c_str(), X_OK) == 0 ? std::optional(program) : std::nullopt;
	const char *path = std::getenv("PATH");
	std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (std::string dir; std::getline(dirs, dir, ':');) {
		const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
		if (access(candidate.c_str(), X_OK) == 0)
			return candidate;
	}
	return std::nullopt;
}

// ldd's standard output; empty for a file that is not a dynamic executable (a script), which ldd says on stderr.
std::string lddOutput(const std::string &path)
{
	int out[2];
	if (pipe2(out, O_CLOEXEC) != 0)
		return {};
	const pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		if (int null = open("/dev/null", O_WRONLY); null >= 0)
			dup2(null, STDERR_FILENO);
		execlp("ldd", "ldd", path.c_str(), static_cast<char *>(nullptr));
		_exit(127);
	}
	close(out[1]);
	std::string text;
	char buffer[4096];
	for (ssize_t n; pid > 0 && (n = read(out[0], buffer, sizeof buffer)) != 0;) {
		if (n > 0)
			text.append(buffer, std::size_t(n));
		else if (errno != EINTR)
			break;
	}
	close(out[0]);
	int status = 0;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	return text;
}

} // namespace

std::optional<ProgramMpi> programMpi(const std::string &program)
{
	std::optional<std::string> path = findProgram(program);
	if (!path)
		return std::nullopt;
	ProgramMpi found{*path, {}};
	const std::string libraries = lddOutput(*path);
	// Open MPI's C library has been libmpi.so.40 since 3.0; MPICH's is libmpich.so.12 (Intel MPI's libmpi.so.12 is
	// neither, and has no profiler here).
	if (libraries.find("libmpi.so.40") != std::string::npos)
		found.mpis.push_back("openmpi");
	if (libraries.find("libmpich.so") != std::string::npos)
		found.mpis.push_back("mpich");
	return found;
}

} // namespace malleo::cli
