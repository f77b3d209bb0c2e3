// SPDX-License-Identifier: Apache-2.0
#include "sim_transport.h"

#include <algorithm>
#include <memory>

#include "sim_random.h"

namespace malleo::sim {

void SimTransport::send(uint32_t from, uint32_t to, const Message &message)
{
	WireFrames frames = encodeMessage(message, ++sequence_);
	const std::size_t size = frames.header.size() + frames.body.size();
	stats_.sent++;
	stats_.bytes += size;
	// Drawn whatever the outcome, so that a lost message does not shift the
	// draws of the ones after it.
	const double lossDraw = uniform01(rng_);
	const double jitterDraw = uniform01(rng_);
	if (lossDraw < model_.loss) {
		stats_.lost++;
		return;
	}
	if (linkFreeAt_.size() <= from)
		linkFreeAt_.resize(from + 1, 0.0);
	const double now = clock_.now();
	double &linkFree = linkFreeAt_[from];
	linkFree = std::max(linkFree, now) + static_cast<double>(size) / model_.bandwidth;
	double arrival = linkFree + model_.latency + model_.jitter * jitterDraw;
	// TCP keeps a connection's order: jitter may not overtake.
	double &last = lastArrival_[(static_cast<uint64_t>(from) << 32) | to];
	arrival = std::max(arrival, last);
	last = arrival;

	auto wire = std::make_shared<WireFrames>(std::move(frames));
	clock_.at(arrival, [this, to, wire]() {
		Message decoded;
		auto body = std::span(reinterpret_cast<const uint8_t *>(wire->body.data()),
				      wire->body.size());
		auto rejection = decodeMessage(wire->header, body, kDefaultMaxMessageBytes, decoded);
		bool taken = deliver_(to, decoded, rejection ? &*rejection : nullptr);
		(taken ? stats_.delivered : stats_.undeliverable)++;
	});
}

void SimTransport::sendNowhere(const Message &message)
{
	WireFrames frames = encodeMessage(message, ++sequence_);
	stats_.sent++;
	stats_.bytes += frames.header.size() + frames.body.size();
	stats_.undeliverable++;
}

} // namespace malleo::sim
