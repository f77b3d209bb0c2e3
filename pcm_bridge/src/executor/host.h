// SPDX-License-Identifier: Apache-2.0
// Which processes share this one's host, for what only a host can do: read another process's memory
// (process_vm_readv, executor.cpp) or send it a signal (a parked process's wake-up, reconfiguration/parking.cpp).
#pragma once

#include <cstdint>

namespace malleo::pcm {

// The same on two processes exactly when they run under one boot of one kernel, with one UTS host name (a
// network-namespace "host" of the tests has its own) and one PID namespace, so that a process id means the same
// process to both.
std::int64_t hostKey();

}  // namespace malleo::pcm
