// SPDX-License-Identifier: Apache-2.0
#include "subcommands.h"

#include "parse_failure.h"

namespace malleo::cli {

const std::vector<Subcommand> &subcommands()
{
	static const std::vector<Subcommand> table = {
		{nullptr, "status", "summary of one agent: profile, peers, WRM state, counters", defineStatus,
		 [](Options &o) { return statusCommand(o.global, o.json); }},
		{nullptr, "peers", "the peers one agent knows and what they last reported", definePeers,
		 [](Options &o) { return peersCommand(o.global, o.json); }},
		{nullptr, "apps", "the MPI applications of one agent, or of every node of the virtual cluster by node",
		 defineApps, [](Options &o) { return appsCommand(o.global, o.json); }},
		{nullptr, "force",
		 "tell a malleable application to split, merge or migrate (through the agent hosting its rank 0)",
		 defineForce, [](Options &o) { return forceCommand(o.global, o.force); }},
		{nullptr, "drain", "a node leaves gracefully: its agent moves its processes to other nodes, then exits",
		 defineDrain, [](Options &o) { return drainCommand(o.global, o.drain); }},
		{nullptr, "keygen",
		 "make a CURVE key pair per node: DIR/NODE.key (secret, 0600) and DIR/NODE.pub (public)", defineKeygen,
		 [](Options &o) { return keygenCommand(o.keygen); }},
		{nullptr, "events", "follow one agent's events, one line each", defineEvents,
		 [](Options &o) {
			 if (o.eventsCount->count())
				 o.events.count = o.count;
			 if (o.eventsSeconds->count())
				 o.events.seconds = o.seconds;
			 return eventsCommand(o.global, o.events);
		 }},
		{nullptr, "top", "live view of every node of the cluster and their latest events", defineTop,
		 [](Options &o) {
			 if (o.topDuration->count())
				 o.top.duration = o.seconds;
			 return topCommand(o.global, o.top);
		 }},
		{nullptr, "cluster", "run a virtual cluster of agents on this machine", defineCluster, nullptr},
		{"cluster", "up", "start K agents n1..nK, each on its own CPU (with --hosts, each on a host of its own)",
		 defineClusterUp, [](Options &o) { return clusterUpCommand(o.global, o.up); }},
		{"cluster", "add",
		 "start one more node n<K+1>, seeded with a running node, as a machine that joins the cluster",
		 defineClusterAdd, [](Options &o) { return clusterAddCommand(o.global, o.add); }},
		{"cluster", "down", "stop every agent of the cluster", defineClusterDown,
		 [](Options &o) { return clusterDownCommand(o.global, o.json); }},
		{"cluster", "status", "which nodes of the cluster run, and where", defineClusterStatus,
		 [](Options &o) { return clusterStatusCommand(o.global, o.json); }},
		{nullptr, "run", "run an MPI program with the PMPI profiler in its ranks", defineRun,
		 [](Options &o) { return runCommand(o.global, o.run); }},
		{nullptr, "report", "print saved PMPI profile reports as tables", defineReport,
		 [](Options &o) { return reportCommand(o.reportFiles, o.json); }},
		{nullptr, "load",
		 "real CPU load: busy processes pinned to a node's CPUs (--node) or this machine's (--cpu-list)",
		 defineLoad, [](Options &o) { return loadCommand(o.global, o.load); }},
		{nullptr, "timeline",
		 "an application's reconfigurations and the nodes' joins and drains, from agents' event logs",
		 defineTimeline, [](Options &o) { return timelineCommand(o.timeline); }},
		{nullptr, "plot", "an application's iterations per second over time, reconfigurations marked (gnuplot)",
		 definePlot, [](Options &o) { return plotCommand(o.plot); }},
		// The simulator has its own flags and --help (sim/README.md): everything after `sim` is its, and
		// main.cpp hands it over before CLI11 parses.
		{nullptr, "sim", "simulate agents and an application at scale (malleo sim --help)", nullptr, nullptr},
	};
	return table;
}

void defineGlobalOptions(CLI::App &app, GlobalOptions &g)
{
	app.add_option("--agent", g.agent,
		       "local endpoint of the agent (default: $MALLEO_AGENT, else ipc:///run/malleo/agent.sock as root, ipc://$XDG_RUNTIME_DIR/malleo/agent.sock otherwise)");
	app.add_option("--node", g.node, "talk to this node of the virtual cluster (e.g. n2)");
	app.add_option("--cluster-dir", g.clusterDir,
		       "directory of the virtual cluster (default: $MALLEO_CLUSTER_DIR, else /tmp/malleo-cluster-<uid>)");
	app.add_option("--timeout", g.timeout, "seconds to wait for an agent's answer")
		->check(aboveZero())
		->capture_default_str();
}

} // namespace malleo::cli
