// SPDX-License-Identifier: Apache-2.0
// The options of the subcommands of the virtual cluster: cluster up, add, down and status, keygen, load.
#include "parse_failure.h"
#include "subcommands.h"

namespace malleo::cli {

void defineCluster(CLI::App &command, Options &)
{
	command.require_subcommand(1);
	command.fallthrough();
}

void defineClusterUp(CLI::App &command, Options &o)
{
	command.add_option("--nodes", o.up.nodes, "number of agents")->check(between(1, 1024, true));
	command.add_option("--hosts", o.up.hosts,
			   "make K hosts, each a network namespace with its own address, hostname and TMPDIR on a bridge "
			   "of the cluster's (root only), node nI's agent on host I; alone: K nodes; with --nodes N: "
			   "hosts N+1..K wait for `cluster add`")
		->check(between(1, 253, true));
	command.add_option("--host-cpu-quota", o.up.hostCpuQuota,
			   "with --hosts: each host gets CORES of the machine's CPU (e.g. 0.25: a quarter of a core), a "
			   "cgroup its agent and every process started on it share, and its agent measures itself "
			   "against (root, cgroup v1)")
		->type_name("CORES")
		->check(between(0.01, 1024.0));
	command.add_option("--config", o.up.config, "base agent configuration (JSON) for every node")
		->check(CLI::ExistingFile);
	command.add_option("--profiling", o.up.profiling, "profiling module (e.g. host, static)");
	command.add_option("--protocol", o.up.protocol, "protocol module (e.g. p2p, hierarchical)");
	command.add_option("--decision", o.up.decision, "decision module (e.g. loaddiff)");
	command.add_option("--node-config", o.up.nodeConfigs,
			   "NAME=FILE: merge FILE into node NAME's configuration (repeatable)")
		->allow_extra_args(false);
	command.add_option("--log-level", o.up.logLevel, "the agents' log level (trace, debug, info, ...)");
	command.add_flag("--json", o.up.json, "print the cluster (cluster.json) as JSON");
}

void defineClusterAdd(CLI::App &command, Options &o)
{
	command.add_option("--config", o.add.config,
			   "its agent configuration (JSON) (default: the one every node got at `cluster up`)")
		->check(CLI::ExistingFile);
	command.add_option("--cpus", o.add.cpus, "the CPUs it runs on, e.g. 1 or 0-1 (default: round-robin as `up`)")
		->type_name("LIST");
	command.add_flag("--json", o.add.json, "print the new node (as in cluster.json) as JSON");
}

void defineClusterDown(CLI::App &command, Options &o)
{
	command.add_flag("--json", o.json, "report how each node ended as JSON");
}

void defineClusterStatus(CLI::App &command, Options &o)
{
	command.add_flag("--json", o.json, "print the nodes as JSON");
}

void defineKeygen(CLI::App &command, Options &o)
{
	command.add_option("nodes", o.keygen.nodes, "the nodes' ids, e.g. n1 n2 n3")->required()->type_name("NODE");
	command.add_option("--dir", o.keygen.dir, "where the key files go, created 0700 if missing")
		->capture_default_str();
	command.add_flag("--force", o.keygen.force, "replace a node's existing key files");
	command.add_flag("--json", o.keygen.json, "print the files and public keys made as JSON");
}

void defineLoad(CLI::App &command, Options &o)
{
	command.add_option("--cpus", o.load.cpus, "number of busy processes (default: one per CPU of the node)")
		->type_name("C");
	command.add_option("--for", o.load.seconds, "end them after SECONDS (default: at malleo load --stop)")
		->type_name("SECONDS");
	command.add_option("--cpu-list", o.load.cpuList, "CPUs of this machine instead of a node's (0,1 or 0-1)")
		->type_name("LIST");
	command.add_flag("--stop", o.load.stop, "end the load of --node, or every load when no --node is given");
	command.add_flag("--json", o.load.json, "print the load (with --stop: what ended) as JSON");
	command.footer("--node NODE (a global option) names the node of the virtual cluster to load.");
}

} // namespace malleo::cli
