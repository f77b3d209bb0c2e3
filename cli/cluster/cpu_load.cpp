// SPDX-License-Identifier: Apache-2.0
#include "cpu_load.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cluster_file.h"
#include "node_process.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

// A burner dies at SIGTERM's default action at once; this only covers a machine too loaded to
// schedule it.
constexpr double kStopGrace = 2.0;
// Reading the clock through the vDSO costs tens of nanoseconds: once per this many steps keeps the
// loop busy with arithmetic while a deadline is still met within a fraction of a millisecond.
constexpr int kStepsPerClockRead = 100000;

// Where the burner's arithmetic goes, so that the compiler cannot drop the loop.
volatile std::uint64_t gSink;

std::uint64_t monotonicNs()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
}

double wallNow()
{
	using namespace std::chrono;
	return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::optional<std::string> selfExecutable(Failure &failure)
{
	std::error_code ec;
	fs::path self = fs::read_symlink("/proc/self/exe", ec);
	if (ec) {
		failure = {kExitFailed,
			   fmt::format("cannot find this malleo's executable (/proc/self/exe): {}",
				       ec.message())};
		return std::nullopt;
	}
	return self.string();
}

std::optional<Failure> writeLoad(const std::string &dir, const LoadRecord &record)
{
	const std::string path = loadFilePath(dir);
	const std::string tmp = path + ".tmp";
	{
		std::ofstream out(tmp, std::ios::trunc);
		out << toJson(record).dump(2) << '\n';
		if (!out.flush())
			return Failure{kExitFailed, fmt::format("cannot write {}: {}", tmp,
								std::strerror(errno))};
	}
	std::error_code ec;
	fs::rename(tmp, path, ec);
	if (ec)
		return Failure{kExitFailed, fmt::format("cannot write {}: {}", path, ec.message())};
	return std::nullopt;
}

std::vector<ClusterNode> asProcesses(const LoadRecord &record)
{
	std::vector<ClusterNode> processes;
	for (const Burner &b : record.burners)
		processes.push_back(
		    {fmt::format("cpu {}", b.cpu), b.pid, b.startTime, {}, {}, {}, {}, {}, {}});
	return processes;
}

std::string pidList(const std::vector<Burner> &burners)
{
	std::string list;
	for (const Burner &b : burners)
		list += (list.empty() ? "" : ", ") + std::to_string(b.pid);
	return list;
}

} // namespace

std::string loadFilePath(const std::string &dir)
{
	return (fs::path(dir) / "load.json").string();
}

std::optional<LoadRecord> readLoad(const std::string &dir, Failure &failure)
{
	// A node of an old cluster.json without a run directory has no record: never read one from the current one.
	if (dir.empty()) {
		failure = {kExitFailed, ""};
		return std::nullopt;
	}
	const std::string path = loadFilePath(dir);
	std::ifstream in(path);
	if (!in) {
		failure = {kExitFailed, errno == ENOENT ? ""
							: fmt::format("cannot read {}: {}", path,
								      std::strerror(errno))};
		return std::nullopt;
	}
	nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
	auto burners = j.is_object() ? j.find("burners") : j.end();
	if (!j.is_object() || burners == j.end() || !burners->is_array()) {
		failure = {
		    kExitFailed,
		    fmt::format("{} is not a load record (no \"burners\" list); remove it", path)};
		return std::nullopt;
	}
	LoadRecord record;
	if (auto it = j.find("node"); it != j.end() && it->is_string())
		record.node = it->get<std::string>();
	if (auto it = j.find("cpus"); it != j.end() && it->is_array())
		for (const auto &cpu : *it)
			if (cpu.is_number_integer())
				record.cpus.push_back(cpu.get<int>());
	record.start = j.value("start", 0.0);
	if (auto it = j.find("end"); it != j.end() && it->is_number())
		record.end = it->get<double>();
	for (const auto &b : *burners) {
		// A burner without its pid and start time cannot be told from another process:
		// never signal a guess.
		if (!b.is_object() || !b.contains("pid") || !b["pid"].is_number_integer() ||
		    !b.contains("start_time") || !b["start_time"].is_number_unsigned()) {
			failure = {
			    kExitFailed,
			    fmt::format("{}: a burner lacks its pid or start_time; remove the file",
					path)};
			return std::nullopt;
		}
		record.burners.push_back({b["pid"].get<long>(),
					  b["start_time"].get<unsigned long long>(),
					  b.value("cpu", -1)});
	}
	return record;
}

bool loadRuns(const LoadRecord &record)
{
	for (const Burner &b : record.burners)
		if (processRuns(b.pid, b.startTime))
			return true;
	return false;
}

std::optional<LoadRecord> startLoad(const std::string &dir, const std::string &node,
				    const std::vector<int> &cpus, unsigned count,
				    std::optional<double> seconds, Failure &failure, const HostEntry *host)
{
	std::optional<std::string> self = selfExecutable(failure);
	if (!self)
		return std::nullopt;
	LoadRecord record;
	record.node = node;
	record.start = wallNow();
	std::uint64_t deadline = 0;
	if (seconds) {
		record.end = record.start + *seconds;
		deadline = monotonicNs() + std::uint64_t(std::llround(*seconds * 1e9));
	}
	const std::vector<std::string> argv = {*self, kBurnerArgument, std::to_string(deadline)};
	std::set<int> loaded;
	for (unsigned i = 0; i < count; ++i) {
		const int cpu = cpus[i % cpus.size()];
		// Nothing to log: a burner that starts only spins, and one that cannot start is
		// reported here.
		std::optional<pid_t> pid = spawnDetached(argv, {cpu}, "/dev/null", failure, host);
		if (!pid) {
			(void)stopNodes(asProcesses(record), kStopGrace);
			return std::nullopt;
		}
		record.burners.push_back({*pid, processStartTime(*pid), cpu});
		loaded.insert(cpu);
	}
	record.cpus.assign(loaded.begin(), loaded.end());
	if (std::optional<Failure> f = writeLoad(dir, record)) {
		(void)stopNodes(asProcesses(record), kStopGrace);
		failure = *f;
		return std::nullopt;
	}
	return record;
}

std::optional<LoadStop> stopLoad(const std::string &dir, Failure &failure)
{
	std::optional<LoadRecord> record = readLoad(dir, failure);
	if (!record)
		return std::nullopt;
	LoadStop stop{*record, stopNodes(asProcesses(*record), kStopGrace)};
	bool survivors = false;
	for (const NodeStop &s : stop.burners)
		survivors |= s.result == "survived";
	// Kept while a burner survives, so that a second --stop can retry.
	std::error_code ec;
	if (!survivors)
		fs::remove(loadFilePath(dir), ec);
	return stop;
}

std::optional<std::vector<int>> parseCpuList(const std::string &list)
{
	std::set<int> cpus;
	std::size_t at = 0;
	auto number = [&](int &out) {
		std::size_t digits = 0;
		long value = 0;
		while (at < list.size() && list[at] >= '0' && list[at] <= '9' && digits < 7) {
			value = value * 10 + (list[at++] - '0');
			++digits;
		}
		out = static_cast<int>(value);
		return digits > 0 && (at == list.size() || list[at] < '0' || list[at] > '9');
	};
	while (at <= list.size()) {
		int first = 0, last = 0;
		if (!number(first))
			return std::nullopt;
		last = first;
		if (at < list.size() && list[at] == '-') {
			++at;
			if (!number(last) || last < first)
				return std::nullopt;
		}
		for (int cpu = first; cpu <= last; ++cpu)
			cpus.insert(cpu);
		if (at == list.size())
			break;
		if (list[at++] != ',')
			return std::nullopt;
	}
	return std::vector<int>(cpus.begin(), cpus.end());
}

nlohmann::json toJson(const LoadRecord &record)
{
	nlohmann::json burners = nlohmann::json::array();
	for (const Burner &b : record.burners)
		burners.push_back({{"pid", b.pid}, {"start_time", b.startTime}, {"cpu", b.cpu}});
	return {
	    {"node", record.node.empty() ? nlohmann::json(nullptr) : nlohmann::json(record.node)},
	    {"cpus", record.cpus},
	    {"start", record.start},
	    {"end", record.end ? nlohmann::json(*record.end) : nlohmann::json(nullptr)},
	    {"burners", std::move(burners)}};
}

nlohmann::json toJson(const LoadStop &stop)
{
	nlohmann::json j = toJson(stop.record);
	for (std::size_t i = 0; i < stop.burners.size() && i < j["burners"].size(); ++i)
		j["burners"][i]["result"] = stop.burners[i].result;
	return j;
}

std::string describe(const LoadStop &stop)
{
	const std::string who = stop.record.node.empty() ? "this machine" : stop.record.node;
	std::size_t ended = 0, gone = 0, survived = 0;
	for (const NodeStop &s : stop.burners) {
		ended += s.result == "stopped" || s.result == "killed";
		gone += s.result == "not_running";
		survived += s.result == "survived";
	}
	std::string line = fmt::format("{}: ended {} busy process{} (pids {})", who, ended,
				       ended == 1 ? "" : "es", pidList(stop.record.burners));
	if (ended == 0)
		line = fmt::format("{}: its load had already ended (pids {})", who,
				   pidList(stop.record.burners));
	else if (gone)
		line += fmt::format("; {} had already ended", gone);
	if (survived)
		line += fmt::format("; {} still running after SIGKILL", survived);
	return line;
}

int burnerMain(int argc, char **argv)
{
	char *end = nullptr;
	errno = 0;
	const std::uint64_t deadline = argc == 3 ? std::strtoull(argv[2], &end, 10) : 0;
	if (argc != 3 || errno || end == argv[2] || *end)
		return report(
		    {kExitBadInput, "the load burner is started by `malleo load`, not by hand"});
	// `ps` and `top` show what it is.
	prctl(PR_SET_NAME, "malleo-load", 0, 0, 0);
	std::uint64_t x = std::uint64_t(getpid());
	for (;;) {
		for (int i = 0; i < kStepsPerClockRead; ++i)
			x = x * 6364136223846793005u + 1442695040888963407u;
		gSink = x;
		if (deadline && monotonicNs() >= deadline)
			return kExitOk;
	}
}

} // namespace malleo::cli
