// SPDX-License-Identifier: Apache-2.0
// Hosts of a virtual cluster (`malleo cluster up --hosts K`): each node's agent in a network namespace of its own,
// with its own address on a bridge, hostname (UTS namespace) and TMPDIR, as a machine of a real cluster would have.
// The namespaces hang off a bridge in a namespace of the cluster's own, so nothing of the machine's own network is
// touched; a launch namespace on the same bridge runs mpirun (or hydra), whose daemons reach the hosts through the
// cluster's rsh agent script and hostfile. <cluster-dir>/hosts.json records every namespace before it is made, so
// that `malleo cluster down` removes them all, also after a crash of the CLI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "failure.h"

namespace malleo::cli {

struct NetHost {
	std::string name;    // namespace and hostname, e.g. mh3f09a1-n2
	std::string node;    // the node it hosts, n2
	std::string address; // 10.213.0.2
	std::string tmpDir;  // <cluster-dir>/hosts/<name>/tmp
	std::string cgroup;  // its CPU slice (host_cpu_slice.h), e.g. malleo/mh3f09a1-n2; empty: the whole machine
};

struct HostNetwork {
	std::string dir;    // the cluster directory
	std::string tag;    // mh<6 hex of the directory>: every namespace of this cluster starts with it
	std::string bridge; // the namespace holding the bridge and the hosts' veth ends
	NetHost launch;	    // where mpirun runs: on the bridge, not a node
	std::string hostfile;
	std::string rshAgent; // the script Open MPI (plm_rsh_agent) and hydra (-launcher-exec) start daemons with
	std::vector<NetHost> hosts;
	double cpuQuota = 0.0; // cores of CPU each host gets (--host-cpu-quota); 0: no slices

	const NetHost *ofNode(const std::string &node) const;
	// The subnet every address is in, e.g. 10.213.0.0/24 (for the MPIs' interface choice).
	std::string subnet() const;
};

// Why namespaces cannot be made here (not root, no `ip`), in one line; nullopt when they can.
std::optional<std::string> namespacesUnavailable();

// A new network for the cluster in dir: the bridge, the launch namespace, the hostfile and the agent script;
// recorded in hosts.json before anything is made. On failure what was made is removed. cpuQuota > 0: every host
// gets a CPU slice of that many cores (host_cpu_slice.h), which the rsh agent script puts the daemons it starts in.
std::optional<HostNetwork> makeHostNetwork(const std::string &dir, Failure &failure, double cpuQuota = 0.0);

// One more host for node `node` (n<index>): recorded, then made and put on the bridge; the hostfile lists it.
std::optional<NetHost> addHost(HostNetwork &network, const std::string &node, unsigned index, Failure &failure);

// The network recorded in dir's hosts.json; nullopt (failure line empty) when there is none.
std::optional<HostNetwork> readHostNetwork(const std::string &dir, Failure &failure);

// Removes every namespace, CPU slice, file and directory hosts.json records, then hosts.json. Returns one line per thing that
// could not be removed (empty: all gone).
std::vector<std::string> removeHostNetwork(const std::string &dir);

// Prepared before fork, used in the child between fork and exec (no allocation there): enters the host's network
// namespace and a UTS namespace of its own named after it, joins the host's CPU slice if it has one, and sets
// TMPDIR.
class HostEntry
{
public:
	// withTmpdir false: TMPDIR unset instead, for a launcher that passes its own environment to every rank (hydra),
	// so that each rank keeps the TMPDIR of its own host.
	explicit HostEntry(const NetHost &host, bool withTmpdir = true);
	HostEntry(const HostEntry &) = delete;
	HostEntry &operator=(const HostEntry &) = delete;
	~HostEntry();
	bool opened() const { return openError_.empty(); }
	// What could not be opened, in a line ("cannot open /run/netns/NAME: ..."); empty when opened().
	const std::string &openError() const { return openError_; }
	// In the child: 0, or the errno of the step that failed.
	int enter() const;

private:
	int fd_ = -1;
	std::vector<int> sliceFds_; // the slice's cgroup.procs files, written "0" (the writer) in the child
	std::string openError_;
	std::string hostname_;
	std::string tmpdir_; // TMPDIR=..., or TMPDIR alone: unset
};

} // namespace malleo::cli
