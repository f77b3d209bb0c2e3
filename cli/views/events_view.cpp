// SPDX-License-Identifier: Apache-2.0
// `malleo events`: follows one agent's event stream, one line per event.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "views.h"
#include "event_line.h"
#include "event_stream.h"
#include "interrupt.h"
#include "target.h"

namespace malleo::cli {

int eventsCommand(const GlobalOptions &options, const EventsOptions &events)
{
	Failure failure;
	std::optional<Target> target = singleTarget(options, failure);
	if (!target)
		return report(failure);
	zmq::context_t context(1);
	std::unique_ptr<EventStream> stream = EventStream::open(context, target->endpoint, options.timeout, failure);
	if (!stream)
		return report(failure);
	catchInterrupts();

	const double end = events.seconds ? steadyNow() + *events.seconds : INFINITY;
	unsigned long shown = 0;
	// --for counts once the agent has confirmed: a silent agent is a failure, not zero events.
	while (!interrupted() && (steadyNow() < end || !stream->following()) &&
	       (!events.count || shown < *events.count)) {
		double wait = stream->following() ? std::min(stream->wakeIn(), end - steadyNow()) : stream->wakeIn();
		zmq::pollitem_t item = stream->pollItem();
		try {
			zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<long>(std::ceil(std::max(0.0, wait) * 1000))));
		} catch (const zmq::error_t &e) {
			if (e.num() != EINTR)
				return report({kExitFailed, fmt::format("waiting for events: {}", e.what())});
		}
		std::vector<Message> received;
		std::optional<Failure> broken = stream->service(received);
		auto arrived = std::chrono::system_clock::now();
		for (const Message &event : received) {
			if (events.count && shown >= *events.count)
				break;
			if (events.json)
				std::cout << event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
			else
				std::cout << eventLine(event, stream->when(event, arrived)) << '\n';
			++shown;
		}
		std::cout.flush();
		if (std::string notice = stream->takeNotice(); !notice.empty())
			std::cerr << "malleo: " << notice << '\n';
		if (broken)
			return report(*broken);
	}
	return kExitOk;
}

} // namespace malleo::cli
