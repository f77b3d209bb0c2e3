// SPDX-License-Identifier: Apache-2.0
#include "cgroup_cpu.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace malleo {

namespace {

namespace fs = std::filesystem;

std::string readText(const std::string &path, std::string &text)
{
	std::ifstream in(path);
	if (!in)
		return fmt::format("cannot read '{}': {}", path, std::strerror(errno));
	std::ostringstream s;
	s << in.rdbuf();
	text = s.str();
	return {};
}

std::string readInteger(const std::string &path, long long &value)
{
	std::string text;
	if (std::string err = readText(path, text); !err.empty())
		return err;
	std::istringstream in(text);
	if (!(in >> value))
		return fmt::format("'{}' holds no integer", path);
	return {};
}

// The directory of a controller's hierarchy: <root>/<controller>, or a mount naming it with others
// (<root>/cpu,cpuacct where systemd mounts them together and the single names are missing).
std::string controllerDir(const std::string &root, const std::string &controller)
{
	for (const char *dir : {"", "cpu,cpuacct", "cpuacct,cpu"}) {
		const fs::path candidate = fs::path(root) / (*dir ? std::string(dir) : controller);
		std::error_code ec;
		if (fs::is_directory(candidate, ec))
			return candidate.string();
	}
	return {};
}

} // namespace

std::string cgroupOfController(std::string_view procCgroup, std::string_view controller, std::string &path)
{
	std::size_t start = 0;
	while (start < procCgroup.size()) {
		std::size_t end = procCgroup.find('\n', start);
		if (end == std::string_view::npos)
			end = procCgroup.size();
		std::string_view line = procCgroup.substr(start, end - start);
		start = end + 1;
		const std::size_t first = line.find(':');
		const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
		if (second == std::string_view::npos)
			continue;
		std::string_view controllers = line.substr(first + 1, second - first - 1);
		for (std::size_t at = 0; at <= controllers.size();) {
			std::size_t comma = controllers.find(',', at);
			if (comma == std::string_view::npos)
				comma = controllers.size();
			if (controllers.substr(at, comma - at) == controller) {
				path = std::string(line.substr(second + 1));
				return {};
			}
			at = comma + 1;
		}
	}
	return fmt::format("no cgroup of the {} controller (cgroup v1) in /proc/self/cgroup", controller);
}

std::optional<double> quotaCores(long long quotaUs, long long periodUs)
{
	if (quotaUs <= 0 || periodUs <= 0)
		return std::nullopt;
	return static_cast<double>(quotaUs) / static_cast<double>(periodUs);
}

std::optional<double> sliceBusyFraction(uint64_t usageBeforeNs, uint64_t usageAfterNs, double seconds, double cores)
{
	if (!(seconds > 0) || !(cores > 0) || usageAfterNs < usageBeforeNs)
		return std::nullopt;
	const double used = static_cast<double>(usageAfterNs - usageBeforeNs) * 1e-9;
	return std::min(1.0, used / (seconds * cores));
}

std::string openCpuSlice(const std::string &root, const std::string &name, CpuSlice &slice)
{
	const std::string cpuRoot = controllerDir(root, "cpu");
	const std::string cpuacctRoot = controllerDir(root, "cpuacct");
	if (cpuRoot.empty() || cpuacctRoot.empty())
		return fmt::format("no cgroup v1 cpu and cpuacct hierarchies under {} (host.cgroup needs cgroup v1)", root);
	CpuSlice s;
	std::string cpuPath = name, cpuacctPath = name;
	if (name == "self") {
		std::string text;
		if (std::string err = readText("/proc/self/cgroup", text); !err.empty())
			return err;
		if (std::string err = cgroupOfController(text, "cpu", cpuPath); !err.empty())
			return err;
		if (std::string err = cgroupOfController(text, "cpuacct", cpuacctPath); !err.empty())
			return err;
	}
	s.name = cpuPath;
	// Paths are relative to the hierarchies: "malleo/h1" and "/malleo/h1" alike; ".." would leave them.
	auto under = [](const std::string &dir, const std::string &path) {
		return (fs::path(dir) / fs::path(path).relative_path()).lexically_normal().string();
	};
	if (fs::path(cpuPath).lexically_normal().string().find("..") != std::string::npos)
		return fmt::format("cgroup '{}': a path under the hierarchy, without '..'", name);
	s.cpuDir = under(cpuRoot, cpuPath);
	s.cpuacctDir = under(cpuacctRoot, cpuacctPath);
	long long quota = 0, period = 0;
	if (std::string err = readInteger(s.cpuDir + "/cpu.cfs_quota_us", quota); !err.empty())
		return fmt::format("cgroup '{}': {}", name, err);
	if (std::string err = readInteger(s.cpuDir + "/cpu.cfs_period_us", period); !err.empty())
		return fmt::format("cgroup '{}': {}", name, err);
	std::optional<double> cores = quotaCores(quota, period);
	if (!cores)
		return fmt::format("cgroup '{}' has no CPU quota (cpu.cfs_quota_us {}): its processes may use the whole "
				   "machine, so it is no slice to measure against",
				   name, quota);
	s.cores = *cores;
	uint64_t usage = 0;
	if (std::string err = readSliceUsage(s, usage); !err.empty())
		return fmt::format("cgroup '{}': {}", name, err);
	slice = std::move(s);
	return {};
}

std::string readSliceUsage(const CpuSlice &slice, uint64_t &usageNs)
{
	long long value = 0;
	if (std::string err = readInteger(slice.cpuacctDir + "/cpuacct.usage", value); !err.empty())
		return err;
	if (value < 0)
		return fmt::format("'{}/cpuacct.usage' is negative", slice.cpuacctDir);
	usageNs = static_cast<uint64_t>(value);
	return {};
}

} // namespace malleo
