// SPDX-License-Identifier: Apache-2.0
// The agent's run directory and the files in it, safe on a shared machine: the directory is the agent user's own and
// no one else may write in it, files are 0600 and never written through a symbolic link (a directory another user
// made first could hold one pointing at the victim's files).
#pragma once

#include <string>

namespace malleo {

// Creates `dir` 0700, or accepts an existing one that is a directory (not a link), owned by this user and writable
// by no one else; a mode wider than 0700 in its read or search bits is narrowed. The directories above it must be
// safe too (parentsRefusal). An empty string, or one line.
std::string preparePrivateDir(const std::string &dir);

// Opens `path` for writing, created 0600 or truncated (or, with `append`, written at its end), refusing a symbolic
// link. -1 with `error` set on failure.
int openPrivateFile(const std::string &path, std::string &error, bool append = false);

// Writes `content` to `path` whole: a 0600 temporary beside it, renamed over it. An empty string, or one line.
std::string writePrivateFile(const std::string &path, const std::string &content);

// Whether `pid` is a process that runs: one that exists and is not a zombie (killed, not yet waited for).
bool processRuns(long pid);

// Whether `pid` is a live malleod (an agent.json left behind may name a pid the system has given to another program).
bool isLiveAgent(long pid);

} // namespace malleo
