// SPDX-License-Identifier: Apache-2.0
// Contention-free steps by bipartite edge colouring: senders on one side, receivers on the other, a transfer an
// edge, a step a colour. Edges are coloured one at a time; when the colour free at the sender (a) is taken at the
// receiver, whose free colour is b, the a/b alternating path from the receiver is swapped, which frees a there and,
// the graph being bipartite, never reaches the sender. So D colours suffice for maximum degree D, the least any
// schedule can use. A local copy is an edge like any other: a rank is busy with it for its step.
#include <algorithm>
#include <map>

#include "redistribution/distribution_schedules.h"

namespace malleo::pcm::detail {

namespace {

class EdgeColouring
{
public:
	EdgeColouring(std::size_t senders, std::size_t receivers, int colours)
	    : colours_(colours), atSender_(senders * static_cast<std::size_t>(colours), -1),
	      atReceiver_(receivers * static_cast<std::size_t>(colours), -1)
	{
	}

	// Colours edge `edge` between sender u and receiver v; `colour_of` holds every edge's colour.
	void colour(int edge, std::size_t u, std::size_t v, std::vector<int>& colour_of,
		    const std::vector<std::size_t>& sender_of, const std::vector<std::size_t>& receiver_of)
	{
		int a = freeColour(atSender_, u);
		int b = freeColour(atReceiver_, v);
		if (slot(atReceiver_, v, a) != -1) {
			// Walk the path v -a- w -b- x -a- ... and swap a and b along it.
			std::vector<int> path;
			std::size_t vertex = v;
			bool on_receiver = true;
			int want = a;
			for (;;) {
				int next =
				    on_receiver ? slot(atReceiver_, vertex, want) : slot(atSender_, vertex, want);
				if (next == -1)
					break;
				path.push_back(next);
				vertex = on_receiver ? sender_of[static_cast<std::size_t>(next)]
						     : receiver_of[static_cast<std::size_t>(next)];
				on_receiver = !on_receiver;
				want = want == a ? b : a;
			}
			for (int e : path) {
				slot(atSender_, sender_of[static_cast<std::size_t>(e)],
				     colour_of[static_cast<std::size_t>(e)]) = -1;
				slot(atReceiver_, receiver_of[static_cast<std::size_t>(e)],
				     colour_of[static_cast<std::size_t>(e)]) = -1;
			}
			for (int e : path) {
				int& c = colour_of[static_cast<std::size_t>(e)];
				c = c == a ? b : a;
				slot(atSender_, sender_of[static_cast<std::size_t>(e)], c) = e;
				slot(atReceiver_, receiver_of[static_cast<std::size_t>(e)], c) = e;
			}
		}
		colour_of[static_cast<std::size_t>(edge)] = a;
		slot(atSender_, u, a) = edge;
		slot(atReceiver_, v, a) = edge;
	}

private:
	int& slot(std::vector<int>& table, std::size_t vertex, int colour)
	{
		return table[vertex * static_cast<std::size_t>(colours_) + static_cast<std::size_t>(colour)];
	}

	int freeColour(std::vector<int>& table, std::size_t vertex)
	{
		for (int c = 0; c < colours_; ++c)
			if (slot(table, vertex, c) == -1)
				return c;
		return -1;  // unreachable: a vertex has fewer coloured edges than colours while one is uncoloured
	}

	int colours_;
	std::vector<int> atSender_;  // sender * colours + colour -> edge, -1 when free
	std::vector<int> atReceiver_;
};

}  // namespace

void assignContentionFreeSteps(Schedule& schedule)
{
	std::map<int, std::size_t> senders, receivers;
	std::vector<std::size_t> sender_of, receiver_of;
	std::vector<int> sends, receives;
	for (const Transfer& transfer : schedule.transfers) {
		auto s = senders.emplace(transfer.from, senders.size()).first->second;
		auto r = receivers.emplace(transfer.to, receivers.size()).first->second;
		sender_of.push_back(s);
		receiver_of.push_back(r);
		if (s >= sends.size())
			sends.push_back(0);
		if (r >= receives.size())
			receives.push_back(0);
		++sends[s];
		++receives[r];
	}
	int degree = 0;
	for (int d : sends)
		degree = std::max(degree, d);
	for (int d : receives)
		degree = std::max(degree, d);
	schedule.steps = std::max(degree, 1);
	if (schedule.transfers.empty())
		return;

	EdgeColouring colouring(senders.size(), receivers.size(), degree);
	std::vector<int> colour_of(schedule.transfers.size(), -1);
	for (std::size_t e = 0; e < schedule.transfers.size(); ++e)
		colouring.colour(static_cast<int>(e), sender_of[e], receiver_of[e], colour_of, sender_of, receiver_of);
	for (std::size_t e = 0; e < schedule.transfers.size(); ++e)
		schedule.transfers[e].step = colour_of[e];
	// Executors walk steps in order; keep the transfers of a step together.
	std::stable_sort(schedule.transfers.begin(), schedule.transfers.end(),
			 [](const Transfer& x, const Transfer& y) { return x.step < y.step; });
}

}  // namespace malleo::pcm::detail
