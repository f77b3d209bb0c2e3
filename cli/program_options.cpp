// SPDX-License-Identifier: Apache-2.0
// The options of the subcommands about programs and their records: run, report, timeline, plot.
#include "subcommands.h"

namespace malleo::cli {

void defineRun(CLI::App &command, Options &o)
{
	command.footer("Options malleo does not know, with the words after them up to the next option, go to the "
		       "launcher in their order (then put -- before the program). See docs/cli.md.");
	command.add_option("-n", o.run.ranks, "number of ranks, the active ones with --max (-np N also)")
		->type_name("N")
		->required();
	command.add_option("--max", o.run.maxRanks,
			   "launch this many ranks, -n of them active and the rest parked for a malleable "
			   "application to grow into (PCM bridge pool mode)")
		->type_name("M");
	command.add_option("--mpi", o.run.mpi, "openmpi or mpich (default: the one the program is linked with)")
		->type_name("MPI");
	command.add_option("--mode", o.run.mode,
			   "pool or spawn: how a malleable application grows (default: $MALLEO_PCM_MODE, else pool "
			   "with --max or under MPICH, else spawn)")
		->type_name("MODE");
	command.add_option("--spares-on", o.run.sparesOn,
			   "N1,N2,...: the virtual cluster's nodes that get the spare ranks of --max, round-robin "
			   "(default: the other nodes, then the target node)")
		->type_name("NODES");
	command.add_option("--active-on", o.run.activeOn,
			   "N1,N2,...: the virtual cluster's nodes that get the -n active ranks, round-robin, rank 0 "
			   "on N1 (default: all on the target node)")
		->type_name("NODES");
	command.add_option("--hosts", o.run.hosts, "H1,H2,...: hosts to run the ranks on")->type_name("HOSTS");
	command.add_option("--launcher", o.run.launcher,
			   "mpirun (the MPI's own: mpirun.openmpi or mpiexec.mpich) or srun (inside a Slurm "
			   "allocation: srun --mpi=pmix for Open MPI, --mpi=pmi2 for MPICH; pool mode); default mpirun")
		->type_name("LAUNCHER");
	command.add_option("--profile-dir", o.run.profileDir,
			   "where the report goes, created if missing (default: $MALLEO_PROFILE_DIR, else .)")
		->type_name("DIR");
	command.add_flag("--json", o.run.json,
			 "once the program ends, print {\"status\", \"reports\": [{\"json\", \"summary\"}], "
			 "\"profile_dir\", \"tag\"} as one line on stdout");
	command.add_option("command", o.run.command, "the MPI program to run, after --")
		->required()
		->type_name("-- PROGRAM [ARGS]");
}

void defineReport(CLI::App &command, Options &o)
{
	command.add_option("files", o.reportFiles,
			   "reports (.json), each printed in turn; a directory stands for its newest report")
		->required()
		->type_name("FILE|DIR");
	command.add_flag("--json", o.json, "print the report as JSON");
}

void defineTimeline(CLI::App &command, Options &o)
{
	command.add_option("files", o.timeline.files, "agents' event logs (<run_dir>/events.jsonl)")
		->required()
		->type_name("EVENTS.jsonl");
	command.add_option("--app", o.timeline.app, "the application (default: the one with the most progress reports)")
		->type_name("APP");
	command.add_flag("--json", o.timeline.json, "print the rows as JSON");
	command.add_flag("--all-sessions", o.timeline.allSessions, "every session in the files, not the latest only");
}

void definePlot(CLI::App &command, Options &o)
{
	command.add_option("files", o.plot.files, "agents' event logs (<run_dir>/events.jsonl)")
		->required()
		->type_name("EVENTS.jsonl");
	command.add_option("-o,--output", o.plot.output, "the image to write: FILE.png or FILE.svg")
		->required()
		->type_name("FILE");
	command.add_option("--app", o.plot.app, "the application (default: the one with the most progress reports)")
		->type_name("APP");
	command.add_flag("--json", o.plot.json, "print what was plotted as JSON");
	command.add_flag("--all-sessions", o.plot.allSessions, "every session in the files, not the latest only");
}

} // namespace malleo::cli
