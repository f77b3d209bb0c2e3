// SPDX-License-Identifier: Apache-2.0
// The virtual cluster's subcommands: cluster up, add, down and status, keygen (a node's key pair, also made by
// `cluster up`) and load (busy processes on a node's CPUs). Each returns the exit status (failure.h) and has printed
// its own output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "global_options.h"

namespace malleo::cli {

struct ClusterUpOptions {
	unsigned nodes = 0;
	unsigned hosts = 0; // --hosts K: K hosts (network namespaces; netns_hosts.h), node nI on host I
	double hostCpuQuota = 0.0; // --host-cpu-quota Q: each host a CPU slice of Q cores (host_cpu_slice.h); 0: none
	std::string config;
	std::string profiling;
	std::string protocol;
	std::string decision;
	std::string logLevel;
	std::vector<std::string> nodeConfigs; // NAME=FILE
	bool json = false;
};
int clusterUpCommand(const GlobalOptions &options, const ClusterUpOptions &up);
struct ClusterAddOptions {
	std::string config;		 // default: the cluster's base-config.json
	std::optional<std::string> cpus; // checked by clusterAddCommand, so a bad list gets its own line
	bool json = false;
};
int clusterAddCommand(const GlobalOptions &options, const ClusterAddOptions &add);
int clusterDownCommand(const GlobalOptions &options, bool json);
int clusterStatusCommand(const GlobalOptions &options, bool json);

struct KeygenOptions {
	std::string dir = ".";
	std::vector<std::string> nodes;
	bool force = false;
	bool json = false;
};
int keygenCommand(const KeygenOptions &keygen);

struct LoadOptions {
	// Checked by loadCommand, so that a bad value gets its own line.
	std::optional<std::string> cpus;    // busy processes
	std::optional<std::string> seconds; // --for
	std::optional<std::string> cpuList; // this machine's CPUs instead of a node's
	bool stop = false;
	bool json = false;
};
int loadCommand(const GlobalOptions &options, const LoadOptions &load);

} // namespace malleo::cli
