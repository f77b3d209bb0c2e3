// SPDX-License-Identifier: Apache-2.0
// Profiling module "host".
//
// A node is the set of CPUs the agent measures: by default the CPUs the agent
// is allowed to run on, so a virtual-cluster agent pinned to CPUs 4–7 profiles
// exactly its share of the machine.
//
// Each sample reads /proc/stat and reports, since the previous sample:
//   upw     busy fraction of the set's CPUs (see cpuDelta() in proc_stat.cpp for
//           what counts as busy; guest time is inside user, not added twice);
//           with niced_is_load false, niced processes' time counts as idle
//   apw     1 − upw
//   sigma   standard deviation of apw over the last stability_window samples
//   ctxsw   context switches per second. /proc/stat counts them machine-wide,
//           so agents sharing a machine all see the same rate.
//   cores   CPUs in the set; processes is left 0 for the agent to fill in.
//
// The first sample primes the counters and reports an idle node (apw 1, upw 0)
// without entering it in the σ window: a measurement needs two readings, and a
// reading taken just before the first sample would span a few milliseconds,
// less than one clock tick (10 ms at USER_HZ 100), so its busy fraction would
// be 0 or 1 by chance. A sample within the same tick as the previous one, or a
// failed read, returns the last profile unchanged (the reason is in describe()).
//
// PW is `pw` from the configuration or, without it, cores × the per-core speed
// measured by a calibration at start() (calibration.cpp says what 1.0 is). The
// calibration runs on the agent's thread and measures a busy core as slower:
// give `pw` on nodes that are loaded when the agent starts.
//
// With MALLEO_HWLOC_XML set, the topology is read from that file instead of the
// machine, so tests and `malleo status` demos need no particular hardware.
//
// Options (table "host"):
//   cpus              affinity     CPUs to measure (OS numbers), e.g. [4, 5, 6, 7]
//   pw                null         processing power; null or absent: calibrate
//   calibration_ms    100          length of the calibration, 1 to 10000
//   stability_window  10           samples in σ_i, 2 to 10000
//   proc_stat         "/proc/stat" where to read the counters (for tests)
//   cgroup            ""           a cgroup v1 path ("self": the agent's own): the node is its CPU slice
//   cgroup_root       "/sys/fs/cgroup" where the cgroup hierarchies are mounted
//
// With `cgroup`, the node is a slice of the machine's CPU (a virtual host of `malleo cluster up --hosts K
// --host-cpu-quota Q`, or a container): its cores are the quota in cores rounded up (at most the CPUs above), PW
// is the quota in cores × the per-core speed (calibrated in the thread's CPU time, so the throttling of the slice
// is not counted twice), and upw is the CPU time the group used since the previous sample against the quota over
// that time (cpuacct.usage), niced or not. The CPUs' idle time is not a bound: the other slices of a machine cut in
// quarters keep its CPUs busy while each gets its quota, so a busy CPU says nothing of a slice's share. What the
// machine's other processes take is not seen: a slice weighs as one nice-0 process in the CPU's sharing, so under
// other un-niced load it may get less than its quota while its agent reports room.
//
//   {"host": {"cpus": [0, 1], "stability_window": 20}}
#include "host_profiling.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <sched.h>

#include "topology.h"

namespace malleo {

std::string affinityCpus(std::vector<int> &cpus)
{
	// A cpu_set_t holds 1024 CPUs; larger machines need a larger mask, which
	// the kernel asks for with EINVAL.
	for (int size = 1024; size <= (1 << 20); size *= 2) {
		cpu_set_t *set = CPU_ALLOC(size);
		if (!set)
			return "cannot allocate a CPU mask";
		size_t bytes = CPU_ALLOC_SIZE(size);
		CPU_ZERO_S(bytes, set);
		if (sched_getaffinity(0, bytes, set) == 0) {
			std::vector<int> out;
			for (int cpu = 0; cpu < size; ++cpu)
				if (CPU_ISSET_S(cpu, bytes, set))
					out.push_back(cpu);
			CPU_FREE(set);
			cpus = std::move(out);
			return {};
		}
		int err = errno;
		CPU_FREE(set);
		if (err != EINVAL)
			return fmt::format("sched_getaffinity: {}", std::strerror(err));
	}
	return "sched_getaffinity: the CPU mask is larger than 2^20 CPUs";
}

std::string HostProfiling::configure(const nlohmann::json &table)
{
	// Settings take effect at start(): changing the CPU set or the window
	// under a running measurement would mix two different nodes in one σ.
	return parseHostConfig(table, config_);
}

std::string HostProfiling::readProcStat(ProcStat &out) const
{
	std::ifstream in(config_.procStat);
	if (!in)
		return fmt::format("cannot read '{}': {}", config_.procStat, std::strerror(errno));
	std::ostringstream text;
	text << in.rdbuf();
	if (in.bad())
		return fmt::format("cannot read '{}'", config_.procStat);
	return parseProcStat(text.str(), out);
}

std::string HostProfiling::start()
{
	cpus_ = config_.cpus;
	if (cpus_.empty())
		if (std::string err = affinityCpus(cpus_); !err.empty())
			return err;
	if (cpus_.empty())
		return "the agent may run on no CPU (empty affinity)";

	// Every CPU of the set must be counted now; finding out at the first
	// sample would leave the agent reporting an idle node for ever.
	ProcStat stat;
	if (std::string err = readProcStat(stat); !err.empty())
		return err;
	for (int cpu : cpus_)
		if (!stat.cpus.count(cpu))
			return fmt::format(
			    "config key 'host.cpus': cpu{} is not in {} (offline, or not on "
			    "this machine)",
			    cpu, config_.procStat);

	const char *xml = std::getenv("MALLEO_HWLOC_XML");
	if (std::string err = describeTopology(xml ? xml : "", cpus_, topology_); !err.empty())
		return err + (xml ? " (from MALLEO_HWLOC_XML)" : "");

	int cores = static_cast<int>(cpus_.size());
	double powerCores = cores;
	slice_.reset();
	if (!config_.cgroup.empty()) {
		CpuSlice slice;
		if (std::string err = openCpuSlice(config_.cgroupRoot, config_.cgroup, slice); !err.empty())
			return "config key 'host.cgroup': " + err;
		powerCores = std::min(slice.cores, static_cast<double>(cores));
		cores = std::max(1, std::min(cores, static_cast<int>(std::ceil(slice.cores - 1e-9))));
		slice_ = std::move(slice);
	}
	if (config_.pw) {
		pw_ = *config_.pw;
		calibration_.reset();
	} else {
		calibration_ = calibrate(config_.calibrationMs,
					 slice_ ? CalibrationClock::ThreadCpu : CalibrationClock::Wall);
		if (!(calibration_->perCoreSpeed > 0))
			return fmt::format(
			    "calibration measured no speed in {} ms; set 'pw' instead",
			    config_.calibrationMs);
		pw_ = powerCores * calibration_->perCoreSpeed;
	}

	window_ = StabilityWindow(static_cast<size_t>(config_.stabilityWindow));
	previous_.reset();
	profile_ = NodeProfile{};
	profile_.pw = pw_;
	profile_.cores = cores;
	lastError_.clear();
	return {};
}

NodeProfile HostProfiling::sample(double now)
{
	ProcStat current;
	if (std::string err = readProcStat(current); !err.empty()) {
		lastError_ = err;
		return profile_;
	}
	uint64_t usage = 0;
	if (slice_)
		if (std::string err = readSliceUsage(*slice_, usage); !err.empty()) {
			lastError_ = err;
			return profile_;
		}
	if (!previous_) {
		previous_ = std::move(current);
		previousUsage_ = usage;
		previousTime_ = now;
		return profile_;
	}
	if (slice_)
		return sampleSlice(now, std::move(current), usage);

	CpuDelta delta;
	if (std::string err = setDelta(*previous_, current, cpus_, delta); !err.empty()) {
		lastError_ = err;
		return profile_;
	}
	if (delta.total == 0)
		return profile_; // within one tick: keep the baseline, measure next time

	const uint64_t busy = config_.nicedIsLoad ? delta.busy : delta.busy - delta.niced;
	double upw = static_cast<double>(busy) / static_cast<double>(delta.total);
	double apw = 1.0 - upw;
	window_.push(apw);
	profile_.upw = upw;
	profile_.apw = apw;
	profile_.sigma = window_.sigma();
	if (now > previousTime_)
		profile_.ctxswRate =
		    contextSwitchRate(previous_->ctxt, current.ctxt, now - previousTime_);
	previous_ = std::move(current);
	previousTime_ = now;
	lastError_.clear();
	return profile_;
}

NodeProfile HostProfiling::sampleSlice(double now, ProcStat current, uint64_t usage)
{
	// Samples closer than a millisecond measure the counter's granularity, not the load.
	if (!(now - previousTime_ >= 1e-3))
		return profile_;
	std::optional<double> upw = sliceBusyFraction(previousUsage_, usage, now - previousTime_, slice_->cores);
	if (!upw) {
		lastError_ = fmt::format("{}/cpuacct.usage went backwards (the group was made again?)",
					 slice_->cpuacctDir);
	} else {
		window_.push(1.0 - *upw);
		profile_.upw = *upw;
		profile_.apw = 1.0 - *upw;
		profile_.sigma = window_.sigma();
		profile_.ctxswRate = contextSwitchRate(previous_->ctxt, current.ctxt, now - previousTime_);
		lastError_.clear();
	}
	previous_ = std::move(current);
	previousUsage_ = usage;
	previousTime_ = now;
	return profile_;
}

nlohmann::json HostProfiling::describe() const
{
	const char *pwSource = config_.pw ? "config" : "not started";
	nlohmann::json calibration = nullptr;
	if (calibration_) {
		pwSource = "calibration";
		calibration = {{"ms", config_.calibrationMs},
			       {"rounds", calibration_->rounds},
			       {"seconds", calibration_->seconds},
			       {"per_core_speed", calibration_->perCoreSpeed}};
	}
	return {
	    {"module", "host"},
	    {"cpus", cpus_},
	    {"cores", slice_ ? static_cast<std::size_t>(profile_.cores) : cpus_.size()},
	    {"cpu_cores", slice_ ? std::min(slice_->cores, static_cast<double>(cpus_.size()))
				 : static_cast<double>(cpus_.size())},
	    {"pw", pw_},
	    {"pw_source", pwSource},
	    {"calibration", calibration},
	    {"stability_window", config_.stabilityWindow},
	    {"proc_stat", config_.procStat},
	    {"niced_is_load", config_.nicedIsLoad},
	    {"cgroup", slice_ ? nlohmann::json{{"name", slice_->name},
					       {"quota_cores", slice_->cores},
					       {"cpu_dir", slice_->cpuDir},
					       {"cpuacct_dir", slice_->cpuacctDir}}
			      : nlohmann::json(nullptr)},
	    {"topology", topology_},
	    {"last_error",
	     lastError_.empty() ? nlohmann::json(nullptr) : nlohmann::json(lastError_)},
	};
}

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Profiling, "host", "0.1.0", malleo::HostProfiling)
