// SPDX-License-Identifier: Apache-2.0
// Where an agent keeps its socket and files when nothing says otherwise: one rule
// for the agent, the CLI and the libraries in MPI processes, so that each finds
// the others. Header-only and free of the JSON library: the profiler includes it.
#pragma once

#include <cstdlib>
#include <string>

#include <unistd.h>

namespace malleo {

constexpr const char *kAgentSocketName = "agent.sock";

// /run/malleo for root, else $XDG_RUNTIME_DIR/malleo (a directory of the user's own
// that systemd creates 0700); empty when neither applies: a predictable /tmp path
// could be taken by another user first, so the agent then needs --run-dir.
inline std::string defaultRunDir()
{
	if (geteuid() == 0)
		return "/run/malleo";
	if (const char *xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg == '/')
		return std::string(xdg) + "/malleo";
	return {};
}

// The default agent's socket file, and its local endpoint; both empty when there is no default run directory.
inline std::string defaultAgentSocket()
{
	const std::string dir = defaultRunDir();
	return dir.empty() ? std::string() : dir + "/" + kAgentSocketName;
}

inline std::string defaultAgentEndpoint()
{
	const std::string socket = defaultAgentSocket();
	return socket.empty() ? std::string() : "ipc://" + socket;
}

} // namespace malleo
