// SPDX-License-Identifier: Apache-2.0
#include "netns_hosts.h"

#include "host_cpu_slice.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

// A /24 of a private range no address of this machine is given: the bridge lives in a namespace of its own, so it
// would not clash even if one were.
constexpr const char *kSubnet = "10.213.0";
constexpr unsigned kLaunchOctet = 254;
constexpr unsigned kMostHosts = 253;

std::string hostsFilePath(const std::string &dir)
{
	return (fs::path(dir) / "hosts.json").string();
}

std::optional<std::string> findOnPath(const std::string &program)
{
	for (const char *dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
		const fs::path candidate = fs::path(dir) / program;
		if (access(candidate.c_str(), X_OK) == 0)
			return candidate.string();
	}
	return std::nullopt;
}

// Runs a program without a shell; empty on success, else what it said on stderr (or how it ended).
std::string runQuiet(const std::vector<std::string> &argv)
{
	int out[2];
	if (pipe2(out, O_CLOEXEC) != 0)
		return std::strerror(errno);
	std::vector<char *> args;
	for (const std::string &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	const pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], STDERR_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execv(args[0], args.data());
		_exit(127);
	}
	close(out[1]);
	std::string said;
	char buffer[512];
	for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) != 0;) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		said.append(buffer, static_cast<std::size_t>(n));
	}
	close(out[0]);
	int status = 0;
	if (pid < 0)
		return std::strerror(errno);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return {};
	while (!said.empty() && (said.back() == '\n' || said.back() == ' '))
		said.pop_back();
	if (auto nl = said.rfind('\n'); nl != std::string::npos)
		said = said.substr(nl + 1);
	return said.empty() ? fmt::format("{} failed", argv[0]) : said;
}

std::optional<Failure> ip(const std::vector<std::string> &words)
{
	std::vector<std::string> argv = {findOnPath("ip").value_or("ip")};
	argv.insert(argv.end(), words.begin(), words.end());
	if (std::string said = runQuiet(argv); !said.empty()) {
		std::string command;
		for (const std::string &w : words)
			command += " " + w;
		return Failure{kExitFailed, fmt::format("ip{}: {}", command, said)};
	}
	return std::nullopt;
}

nlohmann::json toJson(const NetHost &host)
{
	nlohmann::json j = {{"name", host.name}, {"node", host.node}, {"address", host.address}, {"tmp_dir", host.tmpDir}};
	if (!host.cgroup.empty())
		j["cgroup"] = host.cgroup;
	return j;
}

NetHost hostFromJson(const nlohmann::json &j)
{
	NetHost host;
	host.name = j.value("name", "");
	host.node = j.value("node", "");
	host.address = j.value("address", "");
	host.tmpDir = j.value("tmp_dir", "");
	host.cgroup = j.value("cgroup", "");
	return host;
}

std::optional<Failure> writeRecord(const HostNetwork &network)
{
	nlohmann::json hosts = nlohmann::json::array();
	for (const NetHost &host : network.hosts)
		hosts.push_back(toJson(host));
	const nlohmann::json j = {{"tag", network.tag},	  {"bridge", network.bridge},	  {"launch", toJson(network.launch)},
				  {"hostfile", network.hostfile}, {"rsh_agent", network.rshAgent}, {"hosts", hosts},
				  {"cpu_quota", network.cpuQuota}};
	const std::string path = hostsFilePath(network.dir);
	{
		std::ofstream out(path + ".tmp", std::ios::trunc);
		out << j.dump(2) << '\n';
		if (!out.flush())
			return Failure{kExitFailed, fmt::format("cannot write {}.tmp: {}", path, std::strerror(errno))};
	}
	std::error_code ec;
	fs::rename(path + ".tmp", path, ec);
	if (ec)
		return Failure{kExitFailed, fmt::format("cannot write {}: {}", path, ec.message())};
	return std::nullopt;
}

// Open MPI's hostfile ("name slots=N") and hydra's ("name:N"): every host, many slots, since the ranks a host runs
// are the cluster's business (the bridge binds them to their node's CPUs), not the launcher's.
std::optional<Failure> writeHostfiles(const HostNetwork &network)
{
	std::ofstream openmpi(network.hostfile, std::ios::trunc);
	std::ofstream hydra(network.hostfile + ".hydra", std::ios::trunc);
	for (const NetHost &host : network.hosts) {
		openmpi << host.name << " slots=64\n";
		hydra << host.name << ":64\n";
	}
	if (!openmpi.flush() || !hydra.flush())
		return Failure{kExitFailed, fmt::format("cannot write {}", network.hostfile)};
	return std::nullopt;
}

// ssh's contract: the words after the host are joined and read by a shell on the host. Options before the host
// (hydra's ssh launcher passes -x) are ssh's own and mean nothing here.
std::optional<Failure> writeRshAgent(const HostNetwork &network)
{
	// The daemon started on a host, and every process it starts (ranks, spawned ones), in the host's CPU slice:
	// joined here, before the namespace is entered, since `ip netns exec` mounts a /sys of its own without the
	// cgroup hierarchies.
	std::string sliceJoin;
	if (network.cpuQuota > 0) {
		std::vector<std::string> files = cpuSliceProcsFiles(cpuSliceName("$host"));
		sliceJoin = "# The host's CPU slice (--host-cpu-quota), inherited by all the daemon starts.\n";
		for (const std::string &file : files)
			sliceJoin += fmt::format("echo $$ > \"{}\" || {{ echo \"malleo rsh agent: cannot join the CPU slice "
						 "of $host\" >&2; exit 255; }}\n",
						 file);
	}
	const std::string script = fmt::format(
		R"(#!/bin/sh
# The rsh agent of the malleo cluster in {dir} (written by `malleo cluster up --hosts`): runs a command on one of
# its hosts as ssh would, the words after the host joined and read by a shell there, with the host's hostname and
# TMPDIR. Open MPI: --mca plm_rsh_agent {self}; MPICH: -launcher ssh -launcher-exec {self}.
while [ $# -gt 0 ]; do
	case "$1" in
	-*) shift ;;
	*) break ;;
	esac
done
host=$1
shift
case "$host" in
{tag}-*) ;;
*)
	echo "malleo rsh agent: '$host' is not a host of the cluster in {dir}" >&2
	exit 255
	;;
esac
{join}exec {ip} netns exec "$host" unshare --uts /bin/sh -c \
	'hostname "$1" && TMPDIR="$2" && export TMPDIR && shift 2 && eval "$*"' malleo-host "$host" "{dir}/hosts/$host/tmp" "$@"
)",
		fmt::arg("dir", network.dir), fmt::arg("self", network.rshAgent), fmt::arg("tag", network.tag),
		fmt::arg("ip", findOnPath("ip").value_or("ip")), fmt::arg("join", sliceJoin));
	{
		std::ofstream out(network.rshAgent, std::ios::trunc);
		out << script;
		if (!out.flush())
			return Failure{kExitFailed, fmt::format("cannot write {}", network.rshAgent)};
	}
	std::error_code ec;
	fs::permissions(network.rshAgent, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec, ec);
	if (ec)
		return Failure{kExitFailed, fmt::format("cannot make {} executable: {}", network.rshAgent, ec.message())};
	return std::nullopt;
}

// A namespace on the bridge through veth `port` (its end in the bridge's namespace; the host's end is eth0).
std::optional<Failure> plugIn(const HostNetwork &network, const NetHost &host, const std::string &port)
{
	std::error_code ec;
	fs::create_directories(host.tmpDir, ec);
	if (ec)
		return Failure{kExitFailed, fmt::format("cannot create {}: {}", host.tmpDir, ec.message())};
	if (fs::exists("/run/netns/" + host.name))
		return Failure{kExitFailed, fmt::format("a network namespace {} exists already (left by another cluster "
							"directory whose name hashes alike?); remove it with `ip netns "
							"del {}`",
							host.name, host.name)};
	const std::vector<std::vector<std::string>> steps = {
		{"netns", "add", host.name},
		{"-n", network.bridge, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", host.name},
		{"-n", network.bridge, "link", "set", port, "master", "br0", "up"},
		{"-n", host.name, "addr", "add", host.address + "/24", "dev", "eth0"},
		{"-n", host.name, "link", "set", "eth0", "up"},
		{"-n", host.name, "link", "set", "lo", "up"},
	};
	for (const auto &step : steps)
		if (auto f = ip(step))
			return f;
	return std::nullopt;
}

NetHost hostNamed(const HostNetwork &network, const std::string &suffix, unsigned octet)
{
	NetHost host;
	host.name = network.tag + "-" + suffix;
	host.address = fmt::format("{}.{}", kSubnet, octet);
	host.tmpDir = (fs::path(network.dir) / "hosts" / host.name / "tmp").string();
	return host;
}

} // namespace

const NetHost *HostNetwork::ofNode(const std::string &node) const
{
	for (const NetHost &host : hosts)
		if (host.node == node)
			return &host;
	return nullptr;
}

std::string HostNetwork::subnet() const
{
	return fmt::format("{}.0/24", kSubnet);
}

std::optional<std::string> namespacesUnavailable()
{
	if (geteuid() != 0)
		return std::string("network namespaces need root (this is uid ") + std::to_string(geteuid()) +
		       "): --hosts cannot make hosts here";
	if (!findOnPath("ip"))
		return std::string("no `ip` (iproute2) in /usr/sbin, /sbin, /usr/bin or /bin: --hosts cannot make hosts here");
	if (!findOnPath("unshare"))
		return std::string("no `unshare` (util-linux): --hosts cannot give hosts their own hostname here");
	return std::nullopt;
}

std::optional<HostNetwork> makeHostNetwork(const std::string &dir, Failure &failure, double cpuQuota)
{
	HostNetwork network;
	network.dir = dir;
	network.cpuQuota = cpuQuota;
	network.tag = fmt::format("mh{:06x}", std::hash<std::string>{}(dir) & 0xffffff);
	network.bridge = network.tag + "-br";
	network.launch = hostNamed(network, "run", kLaunchOctet);
	network.hostfile = (fs::path(dir) / "hosts" / "hostfile").string();
	network.rshAgent = (fs::path(dir) / "hosts" / "rsh-agent").string();
	std::error_code ec;
	fs::create_directories(fs::path(dir) / "hosts", ec);
	if (ec) {
		failure = {kExitFailed, fmt::format("cannot create {}/hosts: {}", dir, ec.message())};
		return std::nullopt;
	}
	if (fs::exists("/run/netns/" + network.bridge)) {
		failure = {kExitFailed, fmt::format("a network namespace {} exists already (another cluster directory "
						    "whose name hashes alike?); remove it with `ip netns del {}`",
						    network.bridge, network.bridge)};
		return std::nullopt;
	}
	auto made = [&]() -> std::optional<Failure> {
		if (auto f = writeRecord(network))
			return f;
		if (auto f = ip({"netns", "add", network.bridge}))
			return f;
		if (auto f = ip({"-n", network.bridge, "link", "add", "br0", "type", "bridge"}))
			return f;
		if (auto f = ip({"-n", network.bridge, "link", "set", "br0", "up"}))
			return f;
		if (auto f = plugIn(network, network.launch, "vrun"))
			return f;
		if (auto f = writeHostfiles(network))
			return f;
		return writeRshAgent(network);
	}();
	if (made) {
		removeHostNetwork(dir);
		failure = *made;
		return std::nullopt;
	}
	return network;
}

std::optional<NetHost> addHost(HostNetwork &network, const std::string &node, unsigned index, Failure &failure)
{
	if (index < 1 || index > kMostHosts) {
		failure = {kExitBadInput, fmt::format("node {}: a cluster's hosts are n1..n{} (one /24)", node, kMostHosts)};
		return std::nullopt;
	}
	// A host left by a node that failed to start (`cluster add` rolled back) serves the node of that name again.
	if (const NetHost *known = network.ofNode(node); known && fs::exists("/run/netns/" + known->name))
		return *known;
	NetHost host = hostNamed(network, node, index);
	host.node = node;
	if (network.cpuQuota > 0)
		host.cgroup = cpuSliceName(host.name);
	network.hosts.push_back(host);
	// Recorded first: a crash between here and the end leaves nothing `cluster down` does not know of.
	if (auto f = writeRecord(network)) {
		network.hosts.pop_back();
		failure = *f;
		return std::nullopt;
	}
	if (auto f = plugIn(network, host, fmt::format("v{}", index))) {
		failure = *f;
		return std::nullopt;
	}
	if (!host.cgroup.empty())
		if (auto f = makeCpuSlice(host.cgroup, network.cpuQuota)) {
			failure = *f;
			return std::nullopt;
		}
	if (auto f = writeHostfiles(network)) {
		failure = *f;
		return std::nullopt;
	}
	return host;
}

std::optional<HostNetwork> readHostNetwork(const std::string &dir, Failure &failure)
{
	const std::string path = hostsFilePath(dir);
	std::ifstream in(path);
	if (!in) {
		failure = {kExitFailed, ""};
		return std::nullopt;
	}
	const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
	if (!j.is_object() || !j.contains("tag") || !j["tag"].is_string() || !j.contains("hosts") ||
	    !j["hosts"].is_array()) {
		failure = {kExitFailed, fmt::format("{} is not a record of a cluster's hosts; remove the namespaces it "
						    "names by hand (`ip netns list`) and the file",
						    path)};
		return std::nullopt;
	}
	HostNetwork network;
	network.dir = dir;
	network.tag = j["tag"];
	network.bridge = j.value("bridge", "");
	if (j.contains("launch") && j["launch"].is_object())
		network.launch = hostFromJson(j["launch"]);
	network.hostfile = j.value("hostfile", "");
	network.rshAgent = j.value("rsh_agent", "");
	if (j.contains("cpu_quota") && j["cpu_quota"].is_number())
		network.cpuQuota = j["cpu_quota"];
	for (const auto &h : j["hosts"])
		if (h.is_object())
			network.hosts.push_back(hostFromJson(h));
	return network;
}

std::vector<std::string> removeHostNetwork(const std::string &dir)
{
	std::vector<std::string> left;
	Failure failure;
	std::optional<HostNetwork> network = readHostNetwork(dir, failure);
	if (!network) {
		if (!failure.line.empty())
			left.push_back(failure.line);
		return left;
	}
	// Only names of this cluster's own: hosts.json is a file anyone with the directory could edit.
	auto ours = [&](const std::string &name) {
		return !name.empty() && name.starts_with(network->tag + "-") && name.find('/') == std::string::npos;
	};
	std::vector<std::string> names;
	for (const NetHost &host : network->hosts)
		names.push_back(host.name);
	names.push_back(network->launch.name);
	names.push_back(network->bridge); // last: deleting the hosts' namespaces took their veths from it already
	for (const std::string &name : names) {
		if (!ours(name) || !fs::exists("/run/netns/" + name))
			continue;
		if (auto f = ip({"netns", "del", name}))
			left.push_back(f->line);
	}
	for (const NetHost &host : network->hosts)
		if (!host.cgroup.empty() && host.cgroup == cpuSliceName(host.name) && ours(host.name))
			for (std::string &line : removeCpuSlice(host.cgroup))
				left.push_back(std::move(line));
	std::error_code ec;
	fs::remove_all(fs::path(dir) / "hosts", ec);
	if (ec)
		left.push_back(fmt::format("cannot remove {}/hosts: {}", dir, ec.message()));
	if (left.empty())
		fs::remove(hostsFilePath(dir), ec);
	return left;
}

HostEntry::HostEntry(const NetHost &host, bool withTmpdir)
	: fd_(open(("/run/netns/" + host.name).c_str(), O_RDONLY | O_CLOEXEC)), hostname_(host.name),
	  tmpdir_(withTmpdir ? "TMPDIR=" + host.tmpDir : "TMPDIR")
{
	if (fd_ < 0) {
		openError_ = fmt::format("cannot open /run/netns/{}: {}", host.name, std::strerror(errno));
		return;
	}
	if (host.cgroup.empty())
		return;
	for (const std::string &file : cpuSliceProcsFiles(host.cgroup)) {
		const int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			openError_ = fmt::format("cannot open {} (the CPU slice of host {}): {}", file, host.name,
						 std::strerror(errno));
			return;
		}
		sliceFds_.push_back(fd);
	}
}

HostEntry::~HostEntry()
{
	if (fd_ >= 0)
		close(fd_);
	for (int fd : sliceFds_)
		close(fd);
}

int HostEntry::enter() const
{
	// "0" is the writing process itself; what it starts inherits the group.
	for (int fd : sliceFds_)
		if (write(fd, "0", 1) != 1)
			return errno;
	if (setns(fd_, CLONE_NEWNET) != 0 || unshare(CLONE_NEWUTS) != 0 ||
	    sethostname(hostname_.c_str(), hostname_.size()) != 0)
		return errno;
	// The child's own copy of the environment: putenv keeps the pointer, which lives as long as the exec; a name
	// without '=' removes the variable (glibc).
	return putenv(const_cast<char *>(tmpdir_.c_str())) == 0 ? 0 : errno;
}

} // namespace malleo::cli
