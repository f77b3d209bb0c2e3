// SPDX-License-Identifier: Apache-2.0
#include "proc_stat.h"

#include <array>
#include <charconv>

#include <fmt/format.h>

namespace malleo {

namespace {

// Splits on blanks without allocating per field; /proc/stat uses single spaces
// but tests and older kernels may not.
std::vector<std::string_view> fields(std::string_view line)
{
	std::vector<std::string_view> out;
	size_t i = 0;
	while (i < line.size()) {
		while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
			++i;
		size_t start = i;
		while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			++i;
		if (i > start)
			out.push_back(line.substr(start, i - start));
	}
	return out;
}

bool toUnsigned(std::string_view s, uint64_t &out)
{
	auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
	return ec == std::errc() && end == s.data() + s.size();
}

// A counter that went backwards counts as no time: the kernel's iowait is known
// to decrease on tickless CPUs, and a negative delta must not wrap around.
uint64_t forward(uint64_t before, uint64_t after)
{
	return after > before ? after - before : 0;
}

} // namespace

std::string parseProcStat(std::string_view text, ProcStat &out)
{
	ProcStat stat;
	bool haveCtxt = false;
	size_t lineNo = 0;
	while (!text.empty()) {
		size_t nl = text.find('\n');
		std::string_view line = text.substr(0, nl);
		text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
		++lineNo;

		// Only the lines we use are split: "intr" alone has thousands of fields.
		bool isCpu = line.starts_with("cpu") && line.size() > 3 && line[3] != ' ';
		bool isCtxt = line.starts_with("ctxt ");
		if (!isCpu && !isCtxt)
			continue;
		std::vector<std::string_view> f = fields(line);

		if (isCtxt) {
			if (f.size() != 2 || !toUnsigned(f[1], stat.ctxt))
				return fmt::format("/proc/stat line {}: malformed ctxt line '{}'",
						   lineNo, line);
			haveCtxt = true;
			continue;
		}

		uint64_t cpu = 0;
		if (!toUnsigned(f[0].substr(3), cpu) || cpu > 1 << 20)
			return fmt::format("/proc/stat line {}: '{}' is not a CPU name", lineNo,
					   f[0]);
		// user nice system idle are in every kernel since 2.4; the later six may
		// be absent. More fields than we know are ignored, for kernels to come.
		if (f.size() < 5)
			return fmt::format(
			    "/proc/stat line {}: {} has {} counters, expected at least 4", lineNo,
			    f[0], f.size() - 1);
		std::array<uint64_t, 10> v{};
		for (size_t i = 1; i < f.size() && i <= v.size(); ++i)
			if (!toUnsigned(f[i], v[i - 1]))
				return fmt::format(
				    "/proc/stat line {}: {} counter {} '{}' is not a number",
				    lineNo, f[0], i, f[i]);
		CpuTimes t{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]};
		if (!stat.cpus.emplace(static_cast<int>(cpu), t).second)
			return fmt::format("/proc/stat line {}: {} appears twice", lineNo, f[0]);
	}
	if (stat.cpus.empty())
		return "/proc/stat has no per-CPU line (cpu0, cpu1, ...)";
	if (!haveCtxt)
		return "/proc/stat has no ctxt line";
	out = std::move(stat);
	return {};
}

// Busy is user + nice + system + irq + softirq + steal; total adds idle and
// iowait. guest and guest_nice are left out of both because the kernel already
// counts guest time inside user and nice. iowait is available time (the CPU
// could run something else); steal is not (the hypervisor gave it away).
CpuDelta cpuDelta(const CpuTimes &b, const CpuTimes &a)
{
	uint64_t busy = forward(b.user, a.user) + forward(b.nice, a.nice) +
			forward(b.system, a.system) + forward(b.irq, a.irq) +
			forward(b.softirq, a.softirq) + forward(b.steal, a.steal);
	uint64_t idle = forward(b.idle, a.idle) + forward(b.iowait, a.iowait);
	return {busy, busy + idle, forward(b.nice, a.nice)};
}

std::string setDelta(const ProcStat &before, const ProcStat &after, const std::vector<int> &cpus,
		     CpuDelta &sum)
{
	if (cpus.empty())
		return "the CPU set is empty";
	CpuDelta s;
	for (int cpu : cpus) {
		auto b = before.cpus.find(cpu);
		auto a = after.cpus.find(cpu);
		if (b == before.cpus.end() || a == after.cpus.end())
			return fmt::format(
			    "cpu{} is not in /proc/stat (offline, or not on this machine)", cpu);
		CpuDelta d = cpuDelta(b->second, a->second);
		s.busy += d.busy;
		s.total += d.total;
		s.niced += d.niced;
	}
	sum = s;
	return {};
}

std::string busyFraction(const ProcStat &before, const ProcStat &after,
			 const std::vector<int> &cpus, double &upw)
{
	CpuDelta sum;
	if (std::string err = setDelta(before, after, cpus, sum); !err.empty())
		return err;
	if (sum.total == 0)
		return "no clock tick elapsed between the two readings";
	upw = static_cast<double>(sum.busy) / static_cast<double>(sum.total);
	return {};
}

double contextSwitchRate(uint64_t before, uint64_t after, double seconds)
{
	if (!(seconds > 0) || after < before)
		return 0.0;
	return static_cast<double>(after - before) / seconds;
}

} // namespace malleo
