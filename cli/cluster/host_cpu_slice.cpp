// SPDX-License-Identifier: Apache-2.0
#include "host_cpu_slice.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char *kRoot = "/sys/fs/cgroup";
// Slices sit at the hierarchies' top, not under a group of their own: CFS shares the CPU between the groups of one
// level, so a parent group would weigh as much as one process of the machine for all the hosts together, and under a
// busy machine each host would get a fraction of its quota. At the top each host weighs as one process (cpu.shares
// 1024, a nice-0 task's), and its quota caps it.
constexpr const char *kPrefix = "malleo-";
// CFS's default period; a quota is a share of it.
constexpr long kPeriodUs = 100000;

fs::path controllerDir(const char *controller)
{
	return fs::path(kRoot) / controller;
}

std::optional<Failure> writeFile(const fs::path &path, const std::string &text)
{
	std::ofstream out(path);
	out << text;
	if (!out.flush())
		return Failure{kExitFailed, fmt::format("cannot write '{}' to {}: {}", text, path.string(),
							std::strerror(errno))};
	return std::nullopt;
}

} // namespace

std::string cpuSliceName(const std::string &host)
{
	return kPrefix + host;
}

std::optional<std::string> cpuSlicesUnavailable()
{
	if (geteuid() != 0)
		return std::string("CPU slices need root: --host-cpu-quota cannot make them here");
	if (!fs::exists(controllerDir("cpu") / "cpu.cfs_quota_us") ||
	    !fs::exists(controllerDir("cpuacct") / "cpuacct.usage"))
		return fmt::format("no cgroup v1 cpu and cpuacct hierarchies at {0}/cpu and {0}/cpuacct (cgroup v2 only?): "
				   "--host-cpu-quota cannot make CPU slices here",
				   kRoot);
	return std::nullopt;
}

std::vector<std::string> cpuSliceProcsFiles(const std::string &name)
{
	return {(controllerDir("cpu") / name / "cgroup.procs").string(),
		(controllerDir("cpuacct") / name / "cgroup.procs").string()};
}

std::optional<Failure> makeCpuSlice(const std::string &name, double cores)
{
	for (const char *controller : {"cpu", "cpuacct"}) {
		std::error_code ec;
		fs::create_directories(controllerDir(controller) / name, ec);
		if (ec)
			return Failure{kExitFailed, fmt::format("cannot make cgroup {}/{}: {}", controllerDir(controller).string(),
								name, ec.message())};
	}
	const fs::path cpu = controllerDir("cpu") / name;
	if (auto f = writeFile(cpu / "cpu.cfs_period_us", std::to_string(kPeriodUs)))
		return f;
	const long quota = std::lround(cores * kPeriodUs);
	return writeFile(cpu / "cpu.cfs_quota_us", std::to_string(quota));
}

std::vector<std::string> removeCpuSlice(const std::string &name)
{
	std::vector<std::string> left;
	for (const char *controller : {"cpu", "cpuacct"}) {
		const fs::path dir = controllerDir(controller) / name;
		std::error_code ec;
		if (!fs::is_directory(dir, ec))
			continue;
		// A group with processes cannot be removed: what is left (an application's rank still running when the
		// cluster goes down) goes back to the root group, which the machine's other processes are in.
		std::ifstream procs(dir / "cgroup.procs");
		for (std::string pid; std::getline(procs, pid);)
			if (!pid.empty())
				writeFile(controllerDir(controller) / "cgroup.procs", pid); // gone meanwhile: nothing to move
		if (rmdir(dir.c_str()) != 0)
			left.push_back(fmt::format("cannot remove cgroup {}: {}", dir.string(), std::strerror(errno)));
	}
	return left;
}

} // namespace malleo::cli
