// SPDX-License-Identifier: Apache-2.0
#include "private_files.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parent_dirs.h"

namespace malleo {

namespace {

std::string makePrivateDir(const std::string &dir)
{
	struct stat st {};
	if (lstat(dir.c_str(), &st) != 0) {
		if (errno != ENOENT)
			return fmt::format("run directory '{}': {}", dir, std::strerror(errno));
		// Its parents as mkdir -p would make them; the directory itself 0700 from the start.
		const std::size_t slash = dir.find_last_of('/');
		if (slash != std::string::npos && slash > 0) {
			const std::string parent = dir.substr(0, slash);
			struct stat p {};
			if (stat(parent.c_str(), &p) != 0)
				if (std::string e = makePrivateDir(parent); !e.empty())
					return e;
		}
		if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
			return fmt::format("run directory '{}': {}", dir, std::strerror(errno));
		if (lstat(dir.c_str(), &st) != 0)
			return fmt::format("run directory '{}': {}", dir, std::strerror(errno));
	}
	if (S_ISLNK(st.st_mode))
		return fmt::format("run directory '{}' is a symbolic link: give the directory itself", dir);
	if (!S_ISDIR(st.st_mode))
		return fmt::format("run directory '{}' is not a directory", dir);
	if (st.st_uid != geteuid())
		return fmt::format("run directory '{}' belongs to uid {}, not to this user (uid {}): another user may have "
				   "made it to catch this agent's files; remove it or choose another --run-dir",
				   dir, st.st_uid, geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return fmt::format("run directory '{}' is writable by others (mode {:04o}): anything in it may have been "
				   "put there by someone else; remove it or `chmod 700` it after checking its contents",
				   dir, st.st_mode & 07777);
	if ((st.st_mode & 07777) != 0700 && chmod(dir.c_str(), 0700) != 0)
		return fmt::format("run directory '{}': cannot make it 0700: {}", dir, std::strerror(errno));
	return {};
}

} // namespace

std::string preparePrivateDir(const std::string &dir)
{
	// The directory is only as safe as the ones above it: checked first, before anything is made in them.
	if (std::string refusal = parentsRefusal(dir); !refusal.empty())
		return refusal;
	return makePrivateDir(dir);
}

int openPrivateFile(const std::string &path, std::string &error, bool append)
{
	const int fd = open(path.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC) | O_NOFOLLOW | O_CLOEXEC,
			    0600);
	if (fd < 0) {
		error = fmt::format("'{}': {}", path, errno == ELOOP ? "is a symbolic link" : std::strerror(errno));
		return -1;
	}
	// An existing file keeps its mode through O_CREAT.
	if (fchmod(fd, 0600) != 0) {
		error = fmt::format("'{}': cannot make it 0600: {}", path, std::strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

std::string writePrivateFile(const std::string &path, const std::string &content)
{
	const std::string tmp = path + ".tmp";
	std::string error;
	const int fd = openPrivateFile(tmp, error);
	if (fd < 0)
		return error;
	std::size_t written = 0;
	while (written < content.size()) {
		const ssize_t n = write(fd, content.data() + written, content.size() - written);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			error = fmt::format("'{}': {}", tmp, std::strerror(errno));
			close(fd);
			return error;
		}
		written += static_cast<std::size_t>(n);
	}
	close(fd);
	if (rename(tmp.c_str(), path.c_str()) != 0)
		return fmt::format("'{}': {}", path, std::strerror(errno));
	return {};
}

bool processRuns(long pid)
{
	if (pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM))
		return false;
	// A process killed but not yet waited for by its parent (a zombie) still answers kill(0): it runs no more.
	std::ifstream stat(fmt::format("/proc/{}/stat", pid));
	std::string text;
	std::getline(stat, text);
	const std::size_t close = text.rfind(')'); // the name in parentheses may hold anything, ')' too
	return close == std::string::npos || close + 2 >= text.size() || (text[close + 2] != 'Z' && text[close + 2] != 'X');
}

bool isLiveAgent(long pid)
{
	if (!processRuns(pid))
		return false;
	std::ifstream comm(fmt::format("/proc/{}/comm", pid));
	std::string name;
	std::getline(comm, name);
	// Without /proc (or its comm), a live pid is taken for an agent: refusing to start beats two agents on one socket.
	return !comm.is_open() || name == "malleod";
}

} // namespace malleo
