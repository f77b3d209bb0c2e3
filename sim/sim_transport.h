// SPDX-License-Identifier: Apache-2.0
// The simulated network between agents: every message is encoded by the real
// codec (so its size is real), may be lost, waits for the sender's link
// (bandwidth), travels with latency and jitter, arrives in order per pair of
// agents, and is decoded and checked on arrival as malleod would.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <unordered_map>
#include <vector>

#include <malleo/message.h>

#include "event_queue.h"
#include "scenario.h"

namespace malleo::sim {

struct TransportStats {
	uint64_t sent = 0;	// messages handed to the network
	uint64_t delivered = 0; // decoded and handed to a live node
	uint64_t lost = 0;	// dropped by the loss model
	uint64_t undeliverable = 0; // unknown endpoint or node down on arrival
	uint64_t bytes = 0;	// encoded bytes sent (header and body)
};

class SimTransport
{
public:
	// `deliver(to, message, rejection)`: the message decoded, or why not;
	// returns false when no live node was there to take it.
	using Deliver = std::function<bool(uint32_t to, const Message &message, const Rejection *rejection)>;

	SimTransport(EventQueue &clock, NetworkModel model, uint64_t seed, Deliver deliver)
		: clock_(clock), model_(model), rng_(seed), deliver_(std::move(deliver))
	{
	}

	void send(uint32_t from, uint32_t to, const Message &message);

	// A message no live node listens for: counted, never delivered.
	void sendNowhere(const Message &message);

	const TransportStats &stats() const { return stats_; }
	const NetworkModel &model() const { return model_; }

private:
	EventQueue &clock_;
	NetworkModel model_;
	std::mt19937_64 rng_;
	Deliver deliver_;
	TransportStats stats_;
	std::vector<double> linkFreeAt_;		  // per sender: when its link is idle
	std::unordered_map<uint64_t, double> lastArrival_; // per (from, to): FIFO order
	uint32_t sequence_ = 0;
};

} // namespace malleo::sim
