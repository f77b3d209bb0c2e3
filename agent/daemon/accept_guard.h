// SPDX-License-Identifier: Apache-2.0
// The accept guard: malleod defines accept() and accept4() itself, so that libzmq's listeners (and the metrics
// endpoint's) never see EMFILE or ENFILE.
//
// Why: libzmq 4.3.4's ipc listener asserts that a failed accept() failed for one of a list of reasons, and EMFILE is
// not in it (src/ipc_listener.cpp, ipc_listener_t::accept), so a local connection that arrives when the process is
// out of descriptors aborts the agent; its TCP listener leaves the connection in the backlog and, polled level-triggered, tries again at once, a
// busy loop until a descriptor is free. The caps on connections (connection_caps.h) keep the agent below its
// limit, but only after the fact: ZeroMQ's io thread accepts a burst faster than the event loop reads the monitor
// that reports it. So at the limit this guard closes a spare descriptor it holds, accepts the pending connection
// with it and closes that at once, takes the spare again, and returns ECONNABORTED, which both listeners take as
// "the client gave up". The client sees its connection closed; nothing waits in the backlog.
//
// libzmq and the rest of the process reach these definitions because an executable's symbols come before a shared
// library's (libzmq calls accept4 through its PLT); the real call is the system call itself.
#pragma once

#include <cstdint>

namespace malleo {

// Takes the spare descriptor. Before any socket listens.
void armAcceptGuard();
// Connections closed at accept for lack of a descriptor since the last call (any thread's accept).
uint64_t takeConnectionsShed();

} // namespace malleo
