// SPDX-License-Identifier: Apache-2.0
// malleo: the command-line tool. Talks to agents over their local endpoint
// (status, peers, events, top) and runs virtual clusters on one machine.
// Exit status: 0 ok, 1 no agent answers or the operation failed, 2 bad usage
// or input. docs/cli.md documents every subcommand.
#include <iostream>
#include <optional>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim_command.h"

#include "command_guide.h"
#include "cluster_commands.h"
#include "commands.h"
#include "cpu_load.h"
#include "failure.h"
#include "global_options.h"
#include "parse_failure.h"
#include "run_arguments.h"
#include "run_options.h"
#include "views.h"

using namespace malleo::cli;

namespace {

constexpr const char *kVersion = "0.1.0";

struct Options {
	GlobalOptions global;
	bool json = false;
	unsigned long count = 0;
	double seconds = 0;
	EventsOptions events;
	TopOptions top;
	ClusterUpOptions up;
	ClusterAddOptions add;
	RunOptions run;
	ForceOptions force;
	DrainOptions drain;
	KeygenOptions keygen;
	std::vector<std::string> reportFiles;
	LoadOptions load;
	TimelineOptions timeline;
	PlotOptions plot;
};

void addGlobalOptions(CLI::App &app, GlobalOptions &g)
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

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"malleo: watch and drive malleo agents, and run virtual clusters on one machine.", "malleo"};
	app.footer("Global options may also follow the subcommand. Exit status: 0 ok, 1 no agent answers or "
		   "the operation failed, 2 bad usage. See docs/cli.md.");
	app.require_subcommand(1);
	app.fallthrough();
	Options o;
	addGlobalOptions(app, o.global);
	app.set_version_flag("--version", std::string("malleo ") + kVersion);

	CLI::App *status = app.add_subcommand("status", "summary of one agent: profile, peers, WRM state, counters");
	status->add_flag("--json", o.json, "print the agent's status reply as JSON");

	CLI::App *peers = app.add_subcommand("peers", "the peers one agent knows and what they last reported");
	peers->add_flag("--json", o.json, "print {\"agent\": id, \"peers\": [...]} as JSON");

	CLI::App *apps = app.add_subcommand(
		"apps", "the MPI applications of one agent, or of every node of the virtual cluster by node");
	apps->add_flag("--json", o.json,
		       "print {\"agent\": id, \"apps\": [...]}, over a cluster the merged {\"agents\", \"apps\", ...}");

	CLI::App *force = app.add_subcommand(
		"force", "tell a malleable application to split, merge or migrate (through the agent hosting its rank 0)");
	force->add_option("app", o.force.app, "the application's id (malleo apps)")->required()->type_name("APP");
	force->add_option("operation", o.force.op, "split, merge or migrate")->required()->type_name("OPERATION");
	force->add_option("count", o.force.count, "processes to add, remove or move")
		->required()
		->type_name("COUNT");
	force->add_option("--node", o.force.node, "split, migrate: the node the processes go to (default: any)");
	force->add_option("--from", o.force.from,
			  "merge, migrate: the node whose processes leave (default: the bridge chooses)");
	force->add_option("--weights", o.force.weights,
			  "W,W,...: data share of each process after the operation, in rank order");
	force->add_option("--wait", o.force.wait,
			  "wait up to SECONDS for the outcome: exit 0 when it succeeded, 1 when it failed")
		->check(aboveZero());
	force->add_flag("--json", o.force.json, "print the command (with --wait: its result) as JSON");

	CLI::App *drain = app.add_subcommand(
		"drain", "a node leaves gracefully: its agent moves its processes to other nodes, then exits");
	drain->add_option("node", o.drain.node, "the node of the virtual cluster to drain (default: as --node)");
	drain->add_option("--deadline", o.drain.deadline,
			  "leave after SECONDS even with processes left (default: the agent's actions.drain_deadline)")
		->check(aboveZero());
	drain->add_option("--wait", o.drain.wait,
			  "follow the drain up to SECONDS: exit 0 once the node hosts no active process, 1 at the deadline")
		->check(aboveZero());
	drain->add_flag("--json", o.drain.json, "print the agent's reply (with --wait: its last drain event) as JSON");

	CLI::App *keygen = app.add_subcommand(
		"keygen", "make a CURVE key pair per node: DIR/NODE.key (secret, 0600) and DIR/NODE.pub (public)");
	keygen->add_option("nodes", o.keygen.nodes, "the nodes' ids, e.g. n1 n2 n3")->required()->type_name("NODE");
	keygen->add_option("--dir", o.keygen.dir, "where the key files go, created 0700 if missing")
		->capture_default_str();
	keygen->add_flag("--force", o.keygen.force, "replace a node's existing key files");
	keygen->add_flag("--json", o.keygen.json, "print the files and public keys made as JSON");

	CLI::App *events = app.add_subcommand("events", "follow one agent's events, one line each");
	events->add_flag("--json", o.events.json, "one JSON object per event and line");
	CLI::Option *count = events->add_option("--count", o.count, "stop after N events")->check(aboveZero(true));
	CLI::Option *seconds = events->add_option("--for", o.seconds, "stop after SECONDS")->check(aboveZero());

	CLI::App *top = app.add_subcommand("top", "live view of every node of the cluster and their latest events");
	CLI::Option *duration = top->add_option("--duration", o.seconds, "stop after SECONDS (default: until Ctrl-C)")
					->check(aboveZero());
	top->add_option("--interval", o.top.interval, "seconds between refreshes")
		->check(between(0.1, 3600.0))
		->capture_default_str();
	top->add_flag("--json", o.top.json, "one JSON object per refresh and line instead of the view");

	CLI::App *cluster = app.add_subcommand("cluster", "run a virtual cluster of agents on this machine");
	cluster->require_subcommand(1);
	cluster->fallthrough();
	CLI::App *up = cluster->add_subcommand(
		"up", "start K agents n1..nK, each on its own CPU (with --hosts, each on a host of its own)");
	CLI::Option *nodes = up->add_option("--nodes", o.up.nodes, "number of agents")->check(between(1, 1024, true));
	up->add_option("--hosts", o.up.hosts,
		       "make K hosts, each a network namespace with its own address, hostname and TMPDIR on a bridge of "
		       "the cluster's (root only), node nI's agent on host I; alone: K nodes; with --nodes N: hosts "
		       "N+1..K wait for `cluster add`")
		->check(between(1, 253, true));
	up->add_option("--host-cpu-quota", o.up.hostCpuQuota,
		       "with --hosts: each host gets CORES of the machine's CPU (e.g. 0.25: a quarter of a core), a cgroup "
		       "its agent and every process started on it share, and its agent measures itself against (root, "
		       "cgroup v1)")
		->type_name("CORES")
		->check(between(0.01, 1024.0));
	(void)nodes;
	up->add_option("--config", o.up.config, "base agent configuration (JSON) for every node")
		->check(CLI::ExistingFile);
	up->add_option("--profiling", o.up.profiling, "profiling module (e.g. host, static)");
	up->add_option("--protocol", o.up.protocol, "protocol module (e.g. p2p, hierarchical)");
	up->add_option("--decision", o.up.decision, "decision module (e.g. loaddiff)");
	up->add_option("--node-config", o.up.nodeConfigs,
		       "NAME=FILE: merge FILE into node NAME's configuration (repeatable)")
		->allow_extra_args(false);
	up->add_option("--log-level", o.up.logLevel, "the agents' log level (trace, debug, info, ...)");
	up->add_flag("--json", o.up.json, "print the cluster (cluster.json) as JSON");
	CLI::App *add = cluster->add_subcommand(
		"add", "start one more node n<K+1>, seeded with a running node, as a machine that joins the cluster");
	add->add_option("--config", o.add.config,
			"its agent configuration (JSON) (default: the one every node got at `cluster up`)")
		->check(CLI::ExistingFile);
	add->add_option("--cpus", o.add.cpus, "the CPUs it runs on, e.g. 1 or 0-1 (default: round-robin as `up`)")
		->type_name("LIST");
	add->add_flag("--json", o.add.json, "print the new node (as in cluster.json) as JSON");
	CLI::App *down = cluster->add_subcommand("down", "stop every agent of the cluster");
	down->add_flag("--json", o.json, "report how each node ended as JSON");
	CLI::App *clusterStatus = cluster->add_subcommand("status", "which nodes of the cluster run, and where");
	clusterStatus->add_flag("--json", o.json, "print the nodes as JSON");

	CLI::App *run = app.add_subcommand("run", "run an MPI program with the PMPI profiler in its ranks");
	run->footer("Options malleo does not know, with the words after them up to the next option, go to the "
		    "launcher in their order (then put -- before the program). See docs/cli.md.");
	run->add_option("-n", o.run.ranks, "number of ranks, the active ones with --max (-np N also)")
		->type_name("N")
		->required();
	run->add_option("--max", o.run.maxRanks,
			"launch this many ranks, -n of them active and the rest parked for a malleable "
			"application to grow into (PCM bridge pool mode)")
		->type_name("M");
	run->add_option("--mpi", o.run.mpi, "openmpi or mpich (default: the one the program is linked with)")
		->type_name("MPI");
	run->add_option("--mode", o.run.mode,
			"pool or spawn: how a malleable application grows (default: $MALLEO_PCM_MODE, else pool "
			"with --max or under MPICH, else spawn)")
		->type_name("MODE");
	run->add_option("--spares-on", o.run.sparesOn,
			"N1,N2,...: the virtual cluster's nodes that get the spare ranks of --max, round-robin "
			"(default: the other nodes, then the target node)")
		->type_name("NODES");
	run->add_option("--active-on", o.run.activeOn,
			"N1,N2,...: the virtual cluster's nodes that get the -n active ranks, round-robin, rank 0 on "
			"N1 (default: all on the target node)")
		->type_name("NODES");
	run->add_option("--hosts", o.run.hosts, "H1,H2,...: hosts to run the ranks on")->type_name("HOSTS");
	run->add_option("--launcher", o.run.launcher,
			"mpirun (the MPI's own: mpirun.openmpi or mpiexec.mpich) or srun (inside a Slurm allocation: "
			"srun --mpi=pmix for Open MPI, --mpi=pmi2 for MPICH; pool mode); default mpirun")
		->type_name("LAUNCHER");
	run->add_option("--profile-dir", o.run.profileDir,
			"where the report goes, created if missing (default: $MALLEO_PROFILE_DIR, else .)")
		->type_name("DIR");
	run->add_flag("--json", o.run.json,
		      "once the program ends, print {\"status\", \"reports\": [{\"json\", \"summary\"}], "
		      "\"profile_dir\", \"tag\"} as one line on stdout");
	run->add_option("command", o.run.command, "the MPI program to run, after --")
		->required()
		->type_name("-- PROGRAM [ARGS]");
	CLI::App *reportView = app.add_subcommand("report", "print saved PMPI profile reports as tables");
	reportView->add_option("files", o.reportFiles,
			       "reports (.json), each printed in turn; a directory stands for its newest report")
		->required()
		->type_name("FILE|DIR");
	reportView->add_flag("--json", o.json, "print the report as JSON");

	CLI::App *load = app.add_subcommand(
		"load", "real CPU load: busy processes pinned to a node's CPUs (--node) or this machine's (--cpu-list)");
	load->add_option("--cpus", o.load.cpus, "number of busy processes (default: one per CPU of the node)")
		->type_name("C");
	load->add_option("--for", o.load.seconds, "end them after SECONDS (default: at malleo load --stop)")
		->type_name("SECONDS");
	load->add_option("--cpu-list", o.load.cpuList, "CPUs of this machine instead of a node's (0,1 or 0-1)")
		->type_name("LIST");
	load->add_flag("--stop", o.load.stop, "end the load of --node, or every load when no --node is given");
	load->add_flag("--json", o.load.json, "print the load (with --stop: what ended) as JSON");
	load->footer("--node NODE (a global option) names the node of the virtual cluster to load.");

	CLI::App *timeline = app.add_subcommand(
		"timeline", "an application's reconfigurations and the nodes' joins and drains, from agents' event logs");
	timeline->add_option("files", o.timeline.files, "agents' event logs (<run_dir>/events.jsonl)")
		->required()
		->type_name("EVENTS.jsonl");
	timeline->add_option("--app", o.timeline.app,
			     "the application (default: the one with the most progress reports)")
		->type_name("APP");
	timeline->add_flag("--json", o.timeline.json, "print the rows as JSON");
	timeline->add_flag("--all-sessions", o.timeline.allSessions, "every session in the files, not the latest only");

	CLI::App *plot = app.add_subcommand(
		"plot", "an application's iterations per second over time, reconfigurations marked (gnuplot)");
	plot->add_option("files", o.plot.files, "agents' event logs (<run_dir>/events.jsonl)")
		->required()
		->type_name("EVENTS.jsonl");
	plot->add_option("-o,--output", o.plot.output, "the image to write: FILE.png or FILE.svg")
		->required()
		->type_name("FILE");
	plot->add_option("--app", o.plot.app, "the application (default: the one with the most progress reports)")
		->type_name("APP");
	plot->add_flag("--json", o.plot.json, "print what was plotted as JSON");
	plot->add_flag("--all-sessions", o.plot.allSessions, "every session in the files, not the latest only");

	// The simulator has its own flags and --help (sim/README.md): everything after `sim` is its.
	app.add_subcommand("sim", "simulate agents and an application at scale (malleo sim --help)");
	// A process of `malleo load`: never a command a person types, so not in the help.
	if (argc >= 2 && std::string_view(argv[1]) == kBurnerArgument)
		return burnerMain(argc, argv);
	if (argc >= 2 && std::string_view(argv[1]) == "sim") {
		std::string name = "malleo sim";
		argv[1] = name.data();
		return malleo::sim::simCommand(argc - 1, argv + 1);
	}

	if (argc >= 2 && std::string_view(argv[1]) == kCompleteArgument)
		return completeCommand(app, std::vector<std::string>(argv + 2, argv + argc));

	if (argc == 1) {
		std::cout << app.help();
		return kExitBadInput;
	}
	RunArguments runArguments = sortRunArguments(argc, argv);
	if (!runArguments.problem.empty()) {
		std::cerr << "malleo run: " << runArguments.problem << '\n';
		return kExitBadInput;
	}
	o.run.launcherOptions = std::move(runArguments.launcherOptions);
	// Before CLI11, whose answer to a typo is "A subcommand is required".
	if (std::optional<std::string> problem = checkCommandWords(app, runArguments.words))
		return report({kExitBadInput, *problem});
	std::vector<char *> words;
	for (std::string &word : runArguments.words)
		words.push_back(word.data());
	try {
		app.parse(int(words.size()), words.data());
	} catch (const CLI::Success &e) {
		return app.exit(e); // --help, --version
	} catch (const CLI::ParseError &e) {
		return report({kExitBadInput, parseFailureLine(app, e)});
	}

	if (count->count())
		o.events.count = o.count;
	if (seconds->count())
		o.events.seconds = o.seconds;
	if (duration->count())
		o.top.duration = o.seconds;

	if (status->parsed())
		return statusCommand(o.global, o.json);
	if (peers->parsed())
		return peersCommand(o.global, o.json);
	if (apps->parsed())
		return appsCommand(o.global, o.json);
	if (events->parsed())
		return eventsCommand(o.global, o.events);
	if (force->parsed())
		return forceCommand(o.global, o.force);
	if (drain->parsed())
		return drainCommand(o.global, o.drain);
	if (top->parsed())
		return topCommand(o.global, o.top);
	if (up->parsed())
		return clusterUpCommand(o.global, o.up);
	if (add->parsed())
		return clusterAddCommand(o.global, o.add);
	if (down->parsed())
		return clusterDownCommand(o.global, o.json);
	if (clusterStatus->parsed())
		return clusterStatusCommand(o.global, o.json);
	if (run->parsed())
		return runCommand(o.global, o.run);
	if (keygen->parsed())
		return keygenCommand(o.keygen);
	if (reportView->parsed())
		return reportCommand(o.reportFiles, o.json);
	if (load->parsed())
		return loadCommand(o.global, o.load);
	if (timeline->parsed())
		return timelineCommand(o.timeline);
	if (plot->parsed())
		return plotCommand(o.plot);
	return report({kExitBadInput, "no subcommand (see malleo --help)"});
}
