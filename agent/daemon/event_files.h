// SPDX-License-Identifier: Apache-2.0
// The agent's event logs in its run directory, kept so that junk cannot push out the record of what the agent
// decided. `events.jsonl` holds every event but rejections, which are sampled: the first few of a kind (channel and
// reason) in each 10 s are written, the rest counted in one `rejected_unwritten` line when the 10 s end, so a flood of
// junk writes a few lines a second, not one a message. `decisions.jsonl` holds decisions alone (actions, commands,
// reconfigurations, drains, applications coming and going, the agent starting and leaving), with a size budget of its
// own and kept across restarts: what a peer or a client can send at will (rejections, peers, work requests, progress
// reports) never reaches it. Each file, past its budget, starts again with the previous one kept as NAME.1.jsonl.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace malleo {

class EventFiles
{
public:
	struct Limits {
		std::size_t eventsBytes = 64u << 20;
		std::size_t decisionsBytes = 16u << 20;
		unsigned rejectionsPerWindow = 5; // rejections written per kind per window
		double window = 10.0;		  // seconds, of the agent's clock
	};

	EventFiles() = default;
	explicit EventFiles(Limits limits) : limits_(limits) {}
	~EventFiles();
	EventFiles(const EventFiles &) = delete;
	EventFiles &operator=(const EventFiles &) = delete;

	// Opens both files in `runDir`: the previous run's events.jsonl is kept as events.1.jsonl, decisions.jsonl is
	// appended to. Each starts with a `log_started` line that puts the agent's clock (0 now) on the wall clock. One
	// line per file that cannot be written (its events then go to subscribers only), or an empty string.
	std::string open(const std::string &runDir, const std::string &agentId);
	// Writes an event of the core (it carries `type` and `t`) where it belongs.
	void write(const nlohmann::json &event);
	// Writes the count of the rejections not written in each window that ended by `t` (the agent's clock).
	void flush(double t);
	void close();

	// Whether an event of this type belongs in decisions.jsonl.
	static bool isDecision(const std::string &type);

private:
	struct File {
		std::string path;
		std::string previous; // NAME.1.jsonl
		int fd = -1;
		std::size_t bytes = 0;
		std::size_t limit = 0;
	};
	struct Window {
		double start = 0.0;
		unsigned written = 0;
		uint64_t unwritten = 0;
	};

	bool openFile(File &file, bool append, std::string &error);
	void append(File &file, const std::string &line, double t);
	void writeUnwritten(const std::string &kind, const Window &window, double t);
	bool admitRejection(const nlohmann::json &event, double t);
	nlohmann::json logStarted(double t) const;

	Limits limits_;
	std::string agentId_;
	double wallAtZero_ = 0.0; // the wall clock when the agent's clock read 0
	double lastT_ = 0.0;	  // the agent's clock at the last event written
	File events_;
	File decisions_;
	std::map<std::string, Window> windows_; // "channel reason" -> this window's count
};

} // namespace malleo
