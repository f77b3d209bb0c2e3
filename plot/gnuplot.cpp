// SPDX-License-Identifier: Apache-2.0
#include "gnuplot.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace malleo::plot {

std::optional<std::string> findGnuplot(std::string &error)
{
	namespace fs = std::filesystem;
	if (const char *path = std::getenv("PATH")) {
		std::istringstream dirs(path);
		for (std::string dir; std::getline(dirs, dir, ':');) {
			const fs::path candidate = fs::path(dir.empty() ? "." : dir) / "gnuplot";
			std::error_code ec;
			if (fs::is_regular_file(candidate, ec) &&
			    access(candidate.c_str(), X_OK) == 0)
				return candidate.string();
		}
	}
	error = "plot draws with gnuplot, which is not on the PATH: apt-get install gnuplot-nox";
	return std::nullopt;
}

std::optional<std::string> runGnuplot(const std::string &gnuplot, const std::string &script,
				      const std::string &logPath)
{
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, logPath.c_str(),
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
	std::string program = gnuplot, file = script;
	char *argv[] = {program.data(), file.data(), nullptr};
	pid_t pid = 0;
	const int err = posix_spawn(&pid, gnuplot.c_str(), &actions, nullptr, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	if (err != 0)
		return fmt::format("cannot run {}: {}", gnuplot, std::strerror(err));
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return std::nullopt;
	// gnuplot points at the offending line with a caret; the line that says why starts with the
	// script's name.
	std::ifstream log(logPath);
	std::string line, complaint;
	while (std::getline(log, line))
		if (line.find_first_not_of(" ^") != std::string::npos &&
		    line.find("line") != std::string::npos) {
			complaint = line;
			break;
		}
	const std::string how = WIFEXITED(status)
				    ? fmt::format("exit status {}", WEXITSTATUS(status))
				    : fmt::format("signal {}", WTERMSIG(status));
	return fmt::format("gnuplot failed ({}){}", how, complaint.empty() ? "" : ": " + complaint);
}

std::string gnuplotString(const std::string &text)
{
	std::string quoted = "'";
	for (char c : text) {
		if (c == '\'')
			quoted += "''";
		else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
			quoted += ' ';
		else
			quoted += c;
	}
	return quoted + "'";
}

} // namespace malleo::plot
