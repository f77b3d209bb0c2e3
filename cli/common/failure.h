// SPDX-License-Identifier: Apache-2.0
// How a command fails: an exit status and the one line that explains it.
#pragma once

#include <string>

namespace malleo::cli {

// Exit statuses shared by every subcommand (docs/cli.md lists them).
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;   // no agent answers, or the operation failed
constexpr int kExitBadInput = 2; // bad flag, file or name

struct Failure {
	int status = kExitFailed;
	std::string line;
	bool refused = false; // the agent answered with an error: it refused what was asked
};

// Prints "malleo: <line>" on stderr and returns the failure's status.
int report(const Failure &failure);

} // namespace malleo::cli
