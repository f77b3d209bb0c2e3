// SPDX-License-Identifier: Apache-2.0
// What the core's components share: the configuration, the agent's group and profile, the seeded generator, the
// counters, and the numbering of messages and events. Each component (membership.h, work_stealing.h, ...) keeps its
// own state and reaches the others' only through the core (core.h), which dispatches to them.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <malleo/message.h>
#include <malleo/profile.h>

#include "core_config.h"
#include "counters.h"

namespace malleo {

// What the core asks its adapter to do.
struct CoreOutputs {
	struct Send {
		std::string endpoint; // the peer's inbox
		Message message;
	};
	std::vector<Send> sends;
	std::vector<std::string> disconnects; // endpoints no longer needed
	std::vector<nlohmann::json> events;   // for `malleo events` and the log

	void clear()
	{
		sends.clear();
		disconnects.clear();
		events.clear();
	}
};

struct CoreContext {
	explicit CoreContext(CoreConfig c) : config(std::move(c)) {}

	CoreConfig config;
	std::string group; // the protocol module's group for this agent (hierarchical), else empty
	std::mt19937_64 rng;
	NodeProfile local; // the profiling module's last sample
	Counters counters;
	uint64_t nextMessageId = 1;
	uint64_t nextEventSeq = 1;
	double startedAt = 0.0;

	Message envelope(std::string_view type) { return makeMessage(type, config.id, nextMessageId++); }

	void send(const std::string &endpoint, Message message, CoreOutputs &out)
	{
		counters.add("tx." + message["type"].get<std::string>());
		out.sends.push_back({endpoint, std::move(message)});
	}

	void emit(nlohmann::json event, double now, CoreOutputs &out)
	{
		event["seq"] = nextEventSeq++;
		event["t"] = now - startedAt;
		event["agent"] = config.id;
		out.events.push_back(std::move(event));
	}
};

} // namespace malleo
