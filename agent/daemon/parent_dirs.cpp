// SPDX-License-Identifier: Apache-2.0
#include "parent_dirs.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace malleo {

namespace {

namespace fs = std::filesystem;

bool trustedOwner(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

// "/", "/a", "/a/b" for "/a/b/c": the directories above an absolute path, as written.
std::vector<fs::path> ancestors(const fs::path &path)
{
	std::vector<fs::path> above;
	fs::path at;
	for (const fs::path &part : path.parent_path()) {
		at /= part;
		above.push_back(at);
	}
	return above;
}

// Checks a chain of directories from "/" down, `last` the entry below the last of them. An empty string or the
// refusal.
std::string checkChain(const std::string &dir, const std::vector<fs::path> &chain, const fs::path &last)
{
	for (std::size_t i = 0; i < chain.size(); ++i) {
		const std::string at = chain[i].string();
		struct stat st {};
		if (stat(at.c_str(), &st) != 0) {
			if (errno == ENOENT)
				return {}; // made by this agent from here on, 0700
			return fmt::format("run directory '{}': its parent '{}': {}", dir, at, std::strerror(errno));
		}
		if (!S_ISDIR(st.st_mode))
			return fmt::format("run directory '{}': its parent '{}' is not a directory", dir, at);
		if (!trustedOwner(st.st_uid))
			return fmt::format("run directory '{}': its parent '{}' belongs to uid {}, neither root nor this user "
					   "(uid {}), who could swap what is in it for a link; choose a --run-dir whose "
					   "parents only root and you can change",
					   dir, at, st.st_uid, geteuid());
		if (!(st.st_mode & (S_IWGRP | S_IWOTH)))
			continue;
		// A sticky directory (/tmp) lets others add entries but not rename or remove one they do not own: safe
		// if the entry on the way is root's or this user's.
		const fs::path next = i + 1 < chain.size() ? chain[i + 1] : last;
		struct stat entry {};
		const bool ownEntry = lstat(next.c_str(), &entry) != 0 ? errno == ENOENT : trustedOwner(entry.st_uid);
		if (!(st.st_mode & S_ISVTX))
			return fmt::format("run directory '{}': its parent '{}' is writable by others (mode {:04o}), who "
					   "could swap what is in it for a link; choose a --run-dir whose parents only "
					   "root and you can change",
					   dir, at, st.st_mode & 07777);
		if (!ownEntry)
			return fmt::format("run directory '{}': '{}' in the shared directory '{}' belongs to uid {}, who "
					   "could swap it for a link; choose a --run-dir whose parents only root and you "
					   "can change",
					   dir, next.string(), at, entry.st_uid);
	}
	return {};
}

} // namespace

std::string parentsRefusal(const std::string &dir)
{
	std::error_code ec;
	const fs::path path = fs::absolute(dir, ec).lexically_normal();
	if (ec)
		return fmt::format("run directory '{}': {}", dir, ec.message());
	// As written: each directory on the way, links followed.
	if (std::string refusal = checkChain(dir, ancestors(path), path); !refusal.empty())
		return refusal;
	// As the links on the way resolve: the directories a link's target passes through. The deepest parent that
	// exists is resolved; below it, this agent makes the directories itself.
	fs::path parent = path.parent_path();
	while (!parent.empty() && parent != parent.root_path() && !fs::exists(parent, ec))
		parent = parent.parent_path();
	char resolved[PATH_MAX];
	if (parent.empty() || !realpath(parent.c_str(), resolved) || fs::path(resolved) == parent)
		return {};
	const fs::path real = fs::path(resolved) / path.lexically_relative(parent);
	return checkChain(dir, ancestors(real), real);
}

} // namespace malleo
