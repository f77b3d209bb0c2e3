// SPDX-License-Identifier: Apache-2.0
#include "event_files.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

#include "private_files.h"

namespace malleo {

namespace {

namespace fs = std::filesystem;

// Kinds of rejection remembered at most: the kind is a channel and a reason from a fixed set, but a bound costs
// nothing.
constexpr std::size_t kMaxKinds = 256;

double wallNow()
{
	using namespace std::chrono;
	return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Non-ASCII as \uXXXX as well: a line shown by `tail` or `less` holds nothing a terminal acts on (JSON escapes C0
// controls, not C1 ones), and it reads back as the same JSON.
std::string line(const nlohmann::json &event)
{
	return event.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + '\n';
}

double timeOf(const nlohmann::json &event, double otherwise)
{
	auto t = event.find("t");
	return t != event.end() && t->is_number() ? t->get<double>() : otherwise;
}

} // namespace

EventFiles::~EventFiles()
{
	close();
}

bool EventFiles::isDecision(const std::string &type)
{
	return type == "action" || type == "action_skipped" || type.starts_with("reconf_") ||
	       type.starts_with("command_") || type.starts_with("drain") || type == "app_registered" ||
	       type == "app_gone" || type == "process_gone" || type == "started" || type == "joined" ||
	       type == "leaving";
}

std::string EventFiles::open(const std::string &runDir, const std::string &agentId)
{
	close();
	agentId_ = agentId;
	wallAtZero_ = wallNow();
	lastT_ = 0.0;
	windows_.clear();
	events_ = {(fs::path(runDir) / "events.jsonl").string(), (fs::path(runDir) / "events.1.jsonl").string(), -1,
		   0, limits_.eventsBytes};
	decisions_ = {(fs::path(runDir) / "decisions.jsonl").string(),
		      (fs::path(runDir) / "decisions.1.jsonl").string(), -1, 0, limits_.decisionsBytes};
	// The previous run's log is kept once: an agent restarted after a crash still has what led to it.
	std::rename(events_.path.c_str(), events_.previous.c_str());
	std::string problems;
	for (auto [file, appending] : {std::pair{&events_, false}, std::pair{&decisions_, true}}) {
		std::string error;
		if (!openFile(*file, appending, error)) {
			problems += (problems.empty() ? "" : "; ") + error;
			continue;
		}
		append(*file, line(logStarted(0.0)), 0.0);
	}
	return problems;
}

bool EventFiles::openFile(File &file, bool appending, std::string &error)
{
	file.fd = openPrivateFile(file.path, error, appending);
	if (file.fd < 0)
		return false;
	struct stat st {};
	file.bytes = fstat(file.fd, &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
	return true;
}

nlohmann::json EventFiles::logStarted(double t) const
{
	// The same wall clock for the agent's 0 in every file and after every new start of one: `malleo timeline`
	// reading both files sees an event written to each at the same instant, and keeps it once.
	return {{"type", "log_started"}, {"wall", wallAtZero_ + t}, {"t", t}, {"seq", 0}, {"agent", agentId_}};
}

void EventFiles::append(File &file, const std::string &text, double t)
{
	if (file.fd < 0)
		return;
	// Past its budget a file starts again, the old one kept once; its first line anchors its clock.
	if (file.bytes > 0 && file.bytes + text.size() > file.limit) {
		::close(file.fd);
		file.fd = -1;
		std::rename(file.path.c_str(), file.previous.c_str());
		std::string error;
		if (!openFile(file, false, error))
			return;
		append(file, line(logStarted(t)), t);
	}
	// One write per line: a reader never sees half of one unless the disk is full.
	if (::write(file.fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()))
		file.bytes += text.size();
}

void EventFiles::write(const nlohmann::json &event)
{
	const double t = timeOf(event, lastT_);
	lastT_ = t;
	const std::string type = event.value("type", std::string());
	if (type == "rejected" && !admitRejection(event, t))
		return;
	const std::string text = line(event);
	append(events_, text, t);
	if (isDecision(type))
		append(decisions_, text, t);
}

bool EventFiles::admitRejection(const nlohmann::json &event, double t)
{
	const std::string kind = event.value("channel", std::string("?")) + " " + event.value("reason", std::string("?"));
	auto it = windows_.find(kind);
	if (it == windows_.end()) {
		if (windows_.size() >= kMaxKinds)
			flush(INFINITY);
		it = windows_.emplace(kind, Window{t, 0, 0}).first;
	}
	Window &w = it->second;
	if (t - w.start >= limits_.window) {
		writeUnwritten(kind, w, t);
		w = Window{t, 0, 0};
	}
	if (w.written < limits_.rejectionsPerWindow) {
		++w.written;
		return true;
	}
	++w.unwritten;
	return false;
}

void EventFiles::writeUnwritten(const std::string &kind, const Window &w, double t)
{
	if (w.unwritten == 0)
		return;
	const std::size_t space = kind.find(' ');
	const double at = std::isfinite(t) ? t : w.start + limits_.window;
	append(events_,
	       line({{"type", "rejected_unwritten"},
		     {"agent", agentId_},
		     {"t", at},
		     {"channel", kind.substr(0, space)},
		     {"reason", kind.substr(space + 1)},
		     {"count", w.unwritten},
		     {"since", w.start}}),
	       at);
}

void EventFiles::flush(double t)
{
	for (auto it = windows_.begin(); it != windows_.end();) {
		if (t - it->second.start >= limits_.window) {
			writeUnwritten(it->first, it->second, t);
			it = windows_.erase(it);
		} else {
			++it;
		}
	}
}

void EventFiles::close()
{
	// What was counted and not yet said is said before the files close.
	for (const auto &[kind, w] : windows_)
		writeUnwritten(kind, w, lastT_);
	windows_.clear();
	for (File *file : {&events_, &decisions_})
		if (file->fd >= 0) {
			::close(file->fd);
			file->fd = -1;
		}
}

} // namespace malleo
