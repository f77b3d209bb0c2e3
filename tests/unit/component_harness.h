// SPDX-License-Identifier: Apache-2.0
// One core component alone (membership.h, work_stealing.h): its context, a loaded protocol module and hooks that
// record what the component asked of the rest of the core, with messages as a validated peer would send them.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <malleo/protocol_module.h>

#include "core_context.h"
#include "membership.h"
#include "module_registry.h"

namespace malleo::test {

struct ComponentBench {
	explicit ComponentBench(CoreConfig config) : ctx(std::move(config))
	{
		ctx.config.endpoint = "tcp://" + ctx.config.id;
		ModuleLoadResult p = loadModule(ModuleKind::Protocol, "p2p", {});
		REQUIRE(p.error == "");
		protocolHandle = std::move(p.handle);
		REQUIRE(protocolHandle.get()->configure(nlohmann::json::object()) == "");
	}

	ProtocolModule &protocol() { return static_cast<ProtocolModule &>(*protocolHandle.get()); }

	MembershipHooks membershipHooks()
	{
		return {
			.describeSelf = [this](std::string_view type) {
				Message m = ctx.envelope(type);
				m["endpoint"] = ctx.config.endpoint;
				m["group"] = "";
				m["profile"] = toJson(ctx.local);
				return m;
			},
			.reject = [this](const Rejection &r, const Message &, double, CoreOutputs &) {
				rejected.push_back(r.reason);
			},
			.accepted = [this](const Message &m, double) { accepted.push_back(m["from"]); },
			.joined = [this] { ++joined; },
		};
	}

	// A hello, welcome or heartbeat from `id`, listening at tcp://<id>.
	Message from(const std::string &type, const std::string &id, NodeProfile profile = {})
	{
		Message m = makeMessage(type, id, nextId++);
		m["endpoint"] = "tcp://" + id;
		m["group"] = "";
		m["profile"] = toJson(profile);
		if (type == "welcome")
			m["peers"] = nlohmann::json::array();
		return m;
	}

	std::vector<std::string> sentTypes() const
	{
		std::vector<std::string> types;
		for (const CoreOutputs::Send &s : out.sends)
			types.push_back(s.message["type"]);
		return types;
	}

	std::vector<std::string> eventTypes() const
	{
		std::vector<std::string> types;
		for (const nlohmann::json &e : out.events)
			types.push_back(e["type"]);
		return types;
	}

	CoreContext ctx;
	ModuleHandle protocolHandle;
	CoreOutputs out;
	std::vector<std::string> rejected;
	std::vector<std::string> accepted;
	int joined = 0;
	uint64_t nextId = 1;
};

inline CoreConfig agent(const std::string &id)
{
	CoreConfig c;
	c.id = id;
	c.seed = 42;
	return c;
}

inline bool contains(const std::vector<std::string> &list, const std::string &item)
{
	return std::find(list.begin(), list.end(), item) != list.end();
}

} // namespace malleo::test
