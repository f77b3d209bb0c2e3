// SPDX-License-Identifier: Apache-2.0
// The cluster directory, owned by us and held by one `malleo cluster` command
// at a time, so that two `cluster up` cannot both start nodes in it.
#pragma once

#include <memory>
#include <string>

#include "failure.h"

namespace malleo::cli {

class ClusterLock
{
public:
	// Creates dir when needed, refuses one owned by another user (a shared
	// /tmp), and takes the lock without waiting.
	static std::unique_ptr<ClusterLock> acquire(const std::string &dir, Failure &failure);
	~ClusterLock();

	ClusterLock(const ClusterLock &) = delete;
	ClusterLock &operator=(const ClusterLock &) = delete;

private:
	explicit ClusterLock(int fd) : fd_(fd) {}
	int fd_;
};

} // namespace malleo::cli
