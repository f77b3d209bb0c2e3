// SPDX-License-Identifier: Apache-2.0
#include "cluster_lock.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace malleo::cli {

std::unique_ptr<ClusterLock> ClusterLock::acquire(const std::string &dir, Failure &failure)
{
	std::error_code ec;
	std::filesystem::create_directories(dir, ec);
	if (ec) {
		failure = {kExitFailed, fmt::format("cannot create the cluster directory {}: {}", dir,
						    ec.message())};
		return nullptr;
	}
	struct stat st;
	if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
		failure = {kExitFailed, fmt::format("{} is not a directory", dir)};
		return nullptr;
	}
	if (st.st_uid != geteuid()) {
		failure = {kExitFailed, fmt::format("the cluster directory {} belongs to another user; "
						    "choose another with --cluster-dir",
						    dir)};
		return nullptr;
	}
	const std::string path = dir + "/cluster.lock";
	int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		failure = {kExitFailed, fmt::format("cannot open {}: {}", path, std::strerror(errno))};
		return nullptr;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		close(fd);
		failure = {kExitFailed,
			   err == EWOULDBLOCK
				   ? fmt::format("another `malleo cluster` command is working in {}; "
						 "wait for it to finish",
						 dir)
				   : fmt::format("cannot lock {}: {}", path, std::strerror(err))};
		return nullptr;
	}
	return std::unique_ptr<ClusterLock>(new ClusterLock(fd));
}

ClusterLock::~ClusterLock()
{
	int saved = errno; // clean-up leaves errno as it was
	close(fd_);
	errno = saved;
}

} // namespace malleo::cli
