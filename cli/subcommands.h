// SPDX-License-Identifier: Apache-2.0
// malleo's subcommands as a table (subcommands.cpp): each a name, a line of help, its options and what runs it.
// main.cpp makes the CLI11 definition from the table, in its order (the order of `malleo --help` and of the
// completion), and runs the subcommand parsed. A new subcommand is one entry, its options a function beside the
// others of its kind (agent_options.cpp, cluster_options.cpp, program_options.cpp).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cluster_commands.h"
#include "commands.h"
#include "global_options.h"
#include "run_options.h"
#include "views.h"

namespace malleo::cli {

// What the command line said: every subcommand's options, filled by CLI11.
struct Options {
	GlobalOptions global;
	bool json = false;
	unsigned long count = 0;
	double seconds = 0;
	// Options whose "given or not" only CLI11 knows: read after the parse.
	CLI::Option *eventsCount = nullptr;
	CLI::Option *eventsSeconds = nullptr;
	CLI::Option *topDuration = nullptr;
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

struct Subcommand {
	const char *parent; // the group it belongs to ("cluster"), else nullptr
	const char *name;
	const char *description;
	void (*define)(CLI::App &command, Options &o); // its options and flags; nullptr: none
	int (*run)(Options &o);			       // nullptr: a group, or a subcommand main.cpp runs itself
};

// Every subcommand, a group before its members, in `malleo --help` order.
const std::vector<Subcommand> &subcommands();

// The options every subcommand takes (global_options.h).
void defineGlobalOptions(CLI::App &app, GlobalOptions &g);

// The options of each subcommand, by kind: talking to one agent (agent_options.cpp), the virtual cluster
// (cluster_options.cpp), programs and their records (program_options.cpp).
void defineStatus(CLI::App &command, Options &o);
void definePeers(CLI::App &command, Options &o);
void defineApps(CLI::App &command, Options &o);
void defineForce(CLI::App &command, Options &o);
void defineDrain(CLI::App &command, Options &o);
void defineEvents(CLI::App &command, Options &o);
void defineTop(CLI::App &command, Options &o);
void defineCluster(CLI::App &command, Options &o);
void defineClusterUp(CLI::App &command, Options &o);
void defineClusterAdd(CLI::App &command, Options &o);
void defineClusterDown(CLI::App &command, Options &o);
void defineClusterStatus(CLI::App &command, Options &o);
void defineKeygen(CLI::App &command, Options &o);
void defineLoad(CLI::App &command, Options &o);
void defineRun(CLI::App &command, Options &o);
void defineReport(CLI::App &command, Options &o);
void defineTimeline(CLI::App &command, Options &o);
void definePlot(CLI::App &command, Options &o);

} // namespace malleo::cli
