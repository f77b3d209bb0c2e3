// SPDX-License-Identifier: Apache-2.0
// The views: what agents, their event logs and the profiler's reports say, as tables, lines or JSON. Each returns
// the exit status (failure.h) and has printed its own output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "global_options.h"

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

int reportCommand(const std::vector<std::string> &paths, bool json);

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
