// SPDX-License-Identifier: Apache-2.0
// `malleo top`: a live view of every node of the cluster and their latest
// events, redrawn in place with plain ANSI on a terminal, printed as one
// snapshot per interval otherwise (a pipe, a log, the demo's recording).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "agent_client.h"
#include "views.h"
#include "event_words.h"
#include "event_stream.h"
#include "human_units.h"
#include "interrupt.h"
#include "reply_fields.h"
#include "target.h"
#include "text_table.h"
#include "top_frame.h"

namespace malleo::cli {

namespace {

constexpr std::size_t kRecentEvents = 10;
// A node whose event stream broke is subscribed again after this long.
constexpr double kReopenAfter = 2.0;

// Keeps the newest n rows, oldest first: nodes answer in any order.
void keepNewest(std::vector<EventRow> &lines, std::size_t n)
{
	std::stable_sort(lines.begin(), lines.end(),
			 [](const EventRow &a, const EventRow &b) { return a.at < b.at; });
	if (lines.size() > n)
		lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
}

struct NodeWatch {
	Target target;
	std::unique_ptr<AgentClient> status;
	std::unique_ptr<EventStream> events;
	std::optional<nlohmann::json> last;
	double lastReplyAt = -INFINITY;
	std::string problem;
	double reopenAt = 0;
	bool answeredRound = false;
	double lastSeq = 0;
};

// Columns and rows of the terminal, or a classic 120×40 when it will not say.
std::pair<std::size_t, std::size_t> terminalSize()
{
	winsize ws{};
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0)
		return {ws.ws_col, ws.ws_row};
	return {120, 40};
}

class TopView
{
public:
	TopView(const GlobalOptions &options, const TopOptions &top, std::vector<Target> targets);
	int run();

private:
	void startRound(double now);
	void waitAndRead(double until);
	void readStatus(NodeWatch &node, double now);
	void readEvents(NodeWatch &node, double now);
	std::vector<NodeSnapshot> snapshot(double now) const;
	void draw(double now);

	const GlobalOptions &options_;
	const TopOptions &top_;
	zmq::context_t context_{1};
	std::vector<NodeWatch> nodes_;
	std::vector<EventRow> recent_;		// the terminal's event pane, oldest first
	std::vector<EventRow> newLines_;	// events since the last snapshot (plain text)
	std::vector<EventRow> history_;		// replayed events from before we started
	std::chrono::system_clock::time_point startedAt_ = std::chrono::system_clock::now();
	std::vector<nlohmann::json> newEvents_; // events since the last snapshot (JSON)
	bool terminal_;
	bool drawnThisRound_ = false;
	bool legendShown_ = false;
	double start_ = 0;
};

TopView::TopView(const GlobalOptions &options, const TopOptions &top, std::vector<Target> targets)
	: options_(options), top_(top), terminal_(!top.json && isatty(STDOUT_FILENO))
{
	for (Target &t : targets) {
		NodeWatch node;
		node.target = std::move(t);
		nodes_.push_back(std::move(node));
	}
}

void TopView::startRound(double now)
{
	drawnThisRound_ = false;
	for (NodeWatch &node : nodes_) {
		node.answeredRound = false;
		node.status->send("status");
		if (!node.events && now >= node.reopenAt) {
			Failure failure;
			node.events = EventStream::open(context_, node.target.endpoint, options_.timeout, failure);
			if (!node.events) {
				node.problem = failure.line;
				node.reopenAt = now + kReopenAfter;
			}
		}
	}
}

void TopView::readStatus(NodeWatch &node, double now)
{
	std::string problem;
	for (Message &m : node.status->drain(&problem)) {
		if (m["type"] == "error")
			node.problem = node.status->refusal("status", m).line;
		if (m["type"] != "status_reply")
			continue;
		node.last = std::move(m);
		node.lastReplyAt = now;
		node.answeredRound = true;
		node.problem.clear();
	}
	if (!problem.empty())
		node.problem = "unreadable reply: " + problem;
}

void TopView::readEvents(NodeWatch &node, double now)
{
	if (!node.events)
		return;
	std::vector<Message> events;
	std::optional<Failure> broken = node.events->service(events);
	auto arrived = std::chrono::system_clock::now();
	for (Message &e : events) {
		// A stream opened again replays what we have seen: skip by sequence
		// number, which starts again at 1 ("started") when the agent restarts.
		std::optional<double> seq = number(e, {"seq"});
		if (text(e, {"type"}) == "started")
			node.lastSeq = 0;
		if (seq && *seq <= node.lastSeq)
			continue;
		if (seq)
			node.lastSeq = *seq;
		auto at = node.events->when(e, arrived);
		if (top_.json)
			newEvents_.push_back(std::move(e));
		else
			foldEvent(at < startedAt_ ? history_ : newLines_, at, text(e, {"agent"}), eventWords(e));
	}
	if (broken) {
		node.events.reset();
		node.reopenAt = now + kReopenAfter;
	}
}

void TopView::waitAndRead(double until)
{
	std::vector<zmq::pollitem_t> items;
	double wake = until;
	double now = steadyNow();
	for (NodeWatch &node : nodes_) {
		items.push_back(node.status->pollItem());
		if (node.events) {
			items.push_back(node.events->pollItem());
			wake = std::min(wake, now + node.events->wakeIn());
		}
	}
	long ms = static_cast<long>(std::ceil(std::max(0.0, wake - now) * 1000));
	try {
		zmq::poll(items.data(), items.size(), std::chrono::milliseconds(ms));
	} catch (const zmq::error_t &e) {
		if (e.num() != EINTR)
			throw;
	}
	now = steadyNow();
	for (NodeWatch &node : nodes_) {
		readStatus(node, now);
		readEvents(node, now);
	}
}

std::vector<NodeSnapshot> TopView::snapshot(double now) const
{
	// A reply older than this no longer describes the node.
	const double fresh = std::max(options_.timeout, top_.interval) + 0.5;
	std::vector<NodeSnapshot> out;
	for (const NodeWatch &node : nodes_) {
		NodeSnapshot s{node.target.name, node.target.endpoint, std::nullopt, node.problem};
		if (node.last && now - node.lastReplyAt <= fresh)
			s.status = node.last;
		else if (s.problem.empty())
			s.problem = std::isinf(node.lastReplyAt)
					    ? (now - start_ > options_.timeout ? "not answering" : "no answer yet")
					    : fmt::format("not answering for {}", formatDuration(now - node.lastReplyAt));
		out.push_back(std::move(s));
	}
	return out;
}

void TopView::draw(double now)
{
	drawnThisRound_ = true;
	std::vector<NodeSnapshot> nodes = snapshot(now);
	std::string clock = formatClock(std::chrono::system_clock::now());
	if (top_.json) {
		nlohmann::json frame = {{"time", clock}, {"nodes", nlohmann::json::array()},
					{"events", std::move(newEvents_)}};
		for (const NodeSnapshot &n : nodes)
			frame["nodes"].push_back(toJson(n));
		newEvents_.clear();
		std::cout << frame.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
		return;
	}
	std::vector<std::string> table = nodeTable(nodes);
	// A log of snapshots says what the columns count once, a screen always.
	if (terminal_ || !legendShown_)
		for (const std::string &line : tableLegend())
			table.push_back(line);
	legendShown_ = true;
	// Agents replay their recent past to a new subscriber: of that, show only
	// what the event pane holds, not hundreds of lines.
	keepNewest(history_, kRecentEvents);
	newLines_.insert(newLines_.begin(), history_.begin(), history_.end());
	history_.clear();
	keepNewest(newLines_, newLines_.size());
	for (const EventRow &row : newLines_)
		for (const std::string &node : row.nodes)
			foldEvent(recent_, row.at, node, row.words);
	keepNewest(recent_, kRecentEvents);
	if (!terminal_) {
		std::cout << fmt::format("--- {}  {} node{}\n", clock, nodes.size(), nodes.size() == 1 ? "" : "s");
		for (const std::string &line : table)
			std::cout << shownText(line) << '\n';
		for (const EventRow &row : newLines_)
			std::cout << eventRowLine(row) << '\n';
		newLines_.clear();
		std::cout.flush();
		return;
	}
	const auto [width, height] = terminalSize();
	std::vector<std::string> screen = {
		fmt::format("malleo top  {}  {} node{}, every {} s  (Ctrl-C quits)", clock, nodes.size(),
			    nodes.size() == 1 ? "" : "s", top_.interval),
		""};
	screen.insert(screen.end(), table.begin(), table.end());
	screen.insert(screen.end(), {"", fmt::format("last events ({} shown, newest last)", recent_.size())});
	for (const EventRow &row : recent_)
		screen.push_back(eventRowLine(row));
	newLines_.clear();
	// A line per row and one left for the cursor: a scrolled screen would not redraw in place.
	if (screen.size() >= height)
		screen.resize(height - 1);
	// Home, then each line over the old one with the rest of it erased, then
	// everything below: no full clear, so the view does not flicker.
	std::string out = "\x1b[H";
	for (const std::string &line : screen)
		out += clip(shownText(line), width) + "\x1b[K\n";
	out += "\x1b[J";
	std::cout << out << std::flush;
}

int TopView::run()
{
	for (NodeWatch &node : nodes_) {
		Failure failure;
		node.status = AgentClient::create(context_, node.target.endpoint, options_.timeout, failure);
		if (!node.status)
			return report(failure);
	}
	catchInterrupts();
	if (terminal_)
		std::cout << "\x1b[?25l\x1b[2J" << std::flush; // hide the cursor, clear once

	const double start = start_ = steadyNow();
	const double end = top_.duration ? start + *top_.duration : INFINITY;
	double nextRound = start;
	while (!interrupted()) {
		double now = steadyNow();
		if (now >= nextRound) {
			if (nextRound > start && !drawnThisRound_)
				draw(now);
			if (now >= end)
				break;
			startRound(now);
			nextRound = std::max(nextRound + top_.interval, now);
		}
		waitAndRead(std::min(nextRound, end));
		// Draw as soon as every node has answered, not at the end of the round.
		bool all = std::all_of(nodes_.begin(), nodes_.end(), [](const NodeWatch &n) {
			return n.answeredRound && (!n.events || n.events->following());
		});
		if (all && !drawnThisRound_)
			draw(steadyNow());
		if (steadyNow() >= end && drawnThisRound_)
			break;
	}
	if (terminal_)
		std::cout << "\x1b[?25h" << std::flush;
	bool anyAnswered = std::any_of(nodes_.begin(), nodes_.end(),
				       [](const NodeWatch &n) { return !std::isinf(n.lastReplyAt); });
	if (!anyAnswered && !interrupted()) {
		if (nodes_.size() > 1)
			return report({kExitFailed, "no node of the cluster answered"});
		return report(nodes_[0].problem.empty() ? nodes_[0].status->silence()
							: Failure{kExitFailed, nodes_[0].problem});
	}
	return kExitOk;
}

} // namespace

int topCommand(const GlobalOptions &options, const TopOptions &top)
{
	Failure failure;
	std::optional<std::vector<Target>> targets = watchTargets(options, failure);
	if (!targets)
		return report(failure);
	TopView view(options, top, std::move(*targets));
	return view.run();
}

} // namespace malleo::cli
