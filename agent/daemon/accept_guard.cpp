// SPDX-License-Identifier: Apache-2.0
#include "accept_guard.h"

#include <atomic>
#include <cerrno>
#include <mutex>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

std::mutex spareMutex;
int spare = -1; // /dev/null, held to be given up for one accept at the limit
std::atomic<uint64_t> shed{0};

int realAccept4(int fd, sockaddr *address, socklen_t *length, int flags)
{
	return static_cast<int>(syscall(SYS_accept4, fd, address, length, flags));
}

void takeSpare()
{
	if (spare < 0)
		spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

// Out of descriptors with a connection pending on fd: accept it on the spare's number and close it.
int shedPending(int fd)
{
	{
		std::lock_guard lock(spareMutex);
		if (spare >= 0) {
			close(spare);
			spare = -1;
		}
		// Another thread may take the number first: then the connection stays pending for the next try.
		const int pending = realAccept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
		if (pending >= 0) {
			close(pending);
			shed.fetch_add(1, std::memory_order_relaxed);
		}
		takeSpare();
	}
	errno = ECONNABORTED;
	return -1;
}

} // namespace

extern "C" int accept4(int fd, sockaddr *address, socklen_t *length, int flags)
{
	const int s = realAccept4(fd, address, length, flags);
	if (s >= 0 || (errno != EMFILE && errno != ENFILE))
		return s;
	return shedPending(fd);
}

extern "C" int accept(int fd, sockaddr *address, socklen_t *length)
{
	return accept4(fd, address, length, 0);
}

namespace malleo {

void armAcceptGuard()
{
	std::lock_guard lock(spareMutex);
	takeSpare();
}

uint64_t takeConnectionsShed()
{
	return shed.exchange(0, std::memory_order_relaxed);
}

} // namespace malleo
