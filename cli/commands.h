// SPDX-License-Identifier: Apache-2.0
// The subcommands of malleo. Each returns the exit status (failure.h) and has
// printed its own output; main.cpp only parses flags and dispatches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "global_options.h"
#include "run_options.h"

namespace malleo::cli {

int statusCommand(const GlobalOptions &options, bool json);
int peersCommand(const GlobalOptions &options, bool json);
int appsCommand(const GlobalOptions &options, bool json);

struct EventsOptions {
	bool json = false;
	std::optional<unsigned long> count; // stop after this many events
	std::optional<double> seconds;      // stop after this long
};
int eventsCommand(const GlobalOptions &options, const EventsOptions &events);

struct TopOptions {
	std::optional<double> duration;
	double interval = 1.0;
	bool json = false;
};
int topCommand(const GlobalOptions &options, const TopOptions &top);

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

struct ForceOptions {
	std::string app;
	std::string op;    // split, merge or migrate
	std::string count; // checked by forceCommand, so a bad one gets its own line
	std::optional<std::string> node;
	std::optional<std::string> from;    // merge, migrate: the node whose processes leave
	std::optional<std::string> weights; // W,W,...
	std::optional<double> wait;	    // seconds to wait for the result
	bool json = false;
};
int forceCommand(const GlobalOptions &options, const ForceOptions &force);
struct DrainOptions {
	std::string node;		 // the node to drain (same as --node)
	std::optional<double> deadline; // seconds; default the agent's actions.drain_deadline
	std::optional<double> wait;	 // seconds to follow it until it is done
	bool json = false;
};
int drainCommand(GlobalOptions options, const DrainOptions &drain);
struct KeygenOptions {
	std::string dir = ".";
	std::vector<std::string> nodes;
	bool force = false;
	bool json = false;
};
int keygenCommand(const KeygenOptions &keygen);

int reportCommand(const std::vector<std::string> &paths, bool json);

struct LoadOptions {
	// Checked by loadCommand, so that a bad value gets its own line.
	std::optional<std::string> cpus;    // busy processes
	std::optional<std::string> seconds; // --for
	std::optional<std::string> cpuList; // this machine's CPUs instead of a node's
	bool stop = false;
	bool json = false;
};
int loadCommand(const GlobalOptions &options, const LoadOptions &load);

struct TimelineOptions {
	std::vector<std::string> files; // agents' events.jsonl
	std::optional<std::string> app;
	bool json = false;
	bool allSessions = false; // else only the latest session of the files (latestSession())
};
int timelineCommand(const TimelineOptions &timeline);

struct PlotOptions {
	std::vector<std::string> files;
	std::string output; // .png or .svg
	std::optional<std::string> app;
	bool json = false;
	bool allSessions = false;
};
int plotCommand(const PlotOptions &plot);

} // namespace malleo::cli
