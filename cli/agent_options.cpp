// SPDX-License-Identifier: Apache-2.0
// The options of the subcommands that talk to one agent: status, peers, apps, force, drain, events, top.
#include "parse_failure.h"
#include "subcommands.h"

namespace malleo::cli {

void defineStatus(CLI::App &command, Options &o)
{
	command.add_flag("--json", o.json, "print the agent's status reply as JSON");
}

void definePeers(CLI::App &command, Options &o)
{
	command.add_flag("--json", o.json, "print {\"agent\": id, \"peers\": [...]} as JSON");
}

void defineApps(CLI::App &command, Options &o)
{
	command.add_flag("--json", o.json,
			 "print {\"agent\": id, \"apps\": [...]}, over a cluster the merged {\"agents\", \"apps\", ...}");
}

void defineForce(CLI::App &command, Options &o)
{
	command.add_option("app", o.force.app, "the application's id (malleo apps)")->required()->type_name("APP");
	command.add_option("operation", o.force.op, "split, merge or migrate")->required()->type_name("OPERATION");
	command.add_option("count", o.force.count, "processes to add, remove or move")
		->required()
		->type_name("COUNT");
	command.add_option("--node", o.force.node, "split, migrate: the node the processes go to (default: any)");
	command.add_option("--from", o.force.from,
			   "merge, migrate: the node whose processes leave (default: the bridge chooses)");
	command.add_option("--weights", o.force.weights,
			   "W,W,...: data share of each process after the operation, in rank order");
	command.add_option("--wait", o.force.wait,
			   "wait up to SECONDS for the outcome: exit 0 when it succeeded, 1 when it failed")
		->check(aboveZero());
	command.add_flag("--json", o.force.json, "print the command (with --wait: its result) as JSON");
}

void defineDrain(CLI::App &command, Options &o)
{
	command.add_option("node", o.drain.node, "the node of the virtual cluster to drain (default: as --node)");
	command.add_option("--deadline", o.drain.deadline,
			   "leave after SECONDS even with processes left (default: the agent's actions.drain_deadline)")
		->check(aboveZero());
	command.add_option("--wait", o.drain.wait,
			   "follow the drain up to SECONDS: exit 0 once the node hosts no active process, 1 at the deadline")
		->check(aboveZero());
	command.add_flag("--json", o.drain.json, "print the agent's reply (with --wait: its last drain event) as JSON");
}

void defineEvents(CLI::App &command, Options &o)
{
	command.add_flag("--json", o.events.json, "one JSON object per event and line");
	o.eventsCount = command.add_option("--count", o.count, "stop after N events")->check(aboveZero(true));
	o.eventsSeconds = command.add_option("--for", o.seconds, "stop after SECONDS")->check(aboveZero());
}

void defineTop(CLI::App &command, Options &o)
{
	o.topDuration = command.add_option("--duration", o.seconds, "stop after SECONDS (default: until Ctrl-C)")
				->check(aboveZero());
	command.add_option("--interval", o.top.interval, "seconds between refreshes")
		->check(between(0.1, 3600.0))
		->capture_default_str();
	command.add_flag("--json", o.top.json, "one JSON object per refresh and line instead of the view");
}

} // namespace malleo::cli
