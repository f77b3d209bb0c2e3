// SPDX-License-Identifier: Apache-2.0
#include "interrupt.h"

#include <csignal>

namespace malleo::cli {

namespace {

volatile std::sig_atomic_t stopRequested = 0;

void onSignal(int)
{
	stopRequested = 1;
}

} // namespace

void catchInterrupts()
{
	struct sigaction action = {};
	action.sa_handler = onSignal;
	sigemptyset(&action.sa_mask);
	action.sa_flags = 0; // no SA_RESTART: a waiting poll returns at once
	sigaction(SIGINT, &action, nullptr);
	sigaction(SIGTERM, &action, nullptr);
}

bool interrupted()
{
	return stopRequested != 0;
}

} // namespace malleo::cli
