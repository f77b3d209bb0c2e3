// SPDX-License-Identifier: Apache-2.0
// The simulated clock: a queue of timed events, run in time order.
//
// Events at the same time run in the order they were scheduled (a sequence
// number breaks ties), so a run depends only on its inputs and seed, never on
// how the heap happens to order equal keys.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace malleo::sim {

class EventQueue
{
public:
	using Action = std::function<void()>;

	double now() const { return now_; }

	// Runs `action` at `at` (never before now).
	void at(double at, Action action)
	{
		heap_.push(Entry{at < now_ ? now_ : at, nextSeq_++, std::move(action)});
	}
	void after(double delay, Action action) { at(now_ + delay, std::move(action)); }

	// Runs events until the queue is empty, `stop` returns true, or the next
	// event is later than `until`. Returns the number of events run.
	uint64_t run(double until, const std::function<bool()> &stop = {})
	{
		uint64_t n = 0;
		while (!heap_.empty() && heap_.top().at <= until) {
			if (stop && stop())
				break;
			Entry e = std::move(const_cast<Entry &>(heap_.top()));
			heap_.pop();
			now_ = e.at;
			e.action();
			++n;
		}
		return n;
	}

	bool empty() const { return heap_.empty(); }
	std::size_t pending() const { return heap_.size(); }

private:
	struct Entry {
		double at;
		uint64_t seq;
		Action action;
	};
	struct Later {
		bool operator()(const Entry &a, const Entry &b) const
		{
			return a.at != b.at ? a.at > b.at : a.seq > b.seq;
		}
	};

	double now_ = 0.0;
	uint64_t nextSeq_ = 0;
	std::priority_queue<Entry, std::vector<Entry>, Later> heap_;
};

} // namespace malleo::sim
