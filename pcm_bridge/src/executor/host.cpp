// SPDX-License-Identifier: Apache-2.0
#include "executor/host.h"

#include <cstdio>
#include <functional>
#include <string>

#include <sys/stat.h>
#include <sys/utsname.h>

namespace malleo::pcm {

namespace {

std::int64_t readHostKey()
{
	std::string key;
	if (std::FILE* file = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
		char line[64] = {};
		if (std::fgets(line, sizeof line, file))
			key = line;
		std::fclose(file);
	}
	utsname name{};
	if (uname(&name) == 0)
		key += name.nodename;
	struct stat pid_namespace{};
	if (stat("/proc/self/ns/pid", &pid_namespace) == 0)
		key += std::to_string(pid_namespace.st_ino);
	return static_cast<std::int64_t>(std::hash<std::string>{}(key));
}

} // namespace

std::int64_t hostKey()
{
	// None of it changes while the process lives.
	static const std::int64_t key = readHostKey();
	return key;
}

}  // namespace malleo::pcm
