// SPDX-License-Identifier: Apache-2.0
// An in-memory network of agent cores for unit tests: messages travel through
// the real codec, time is a number the test advances, nothing touches a socket.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <malleo/decision_module.h>
#include <malleo/protocol_module.h>

#include "core.h"
#include "module_registry.h"

namespace malleo::test {

struct TestNode {
	ModuleHandle protocol;
	ModuleHandle decision;
	std::unique_ptr<Core> core;
	bool up = true;
	std::vector<nlohmann::json> events;

	Counters const &counters() const { return core->counters(); }
	std::vector<nlohmann::json> eventsOf(const std::string &type) const
	{
		std::vector<nlohmann::json> found;
		for (const nlohmann::json &e : events)
			if (e["type"] == type)
				found.push_back(e);
		return found;
	}
};

class TestNetwork
{
public:
	// Adds an agent "tcp://<id>" with the given modules and their tables.
	TestNode &add(CoreConfig config, const std::string &protocol = "p2p",
		      nlohmann::json protocolTable = nlohmann::json::object(),
		      const std::string &decision = "loaddiff",
		      nlohmann::json decisionTable = nlohmann::json::object())
	{
		auto node = std::make_unique<TestNode>();
		ModuleLoadResult p = loadModule(ModuleKind::Protocol, protocol, {});
		ModuleLoadResult d = loadModule(ModuleKind::Decision, decision, {});
		REQUIRE(p.error == "");
		REQUIRE(d.error == "");
		node->protocol = std::move(p.handle);
		node->decision = std::move(d.handle);
		REQUIRE(node->protocol.get()->configure(protocolTable) == "");
		REQUIRE(node->decision.get()->configure(decisionTable) == "");
		config.endpoint = "tcp://" + config.id;
		node->core = std::make_unique<Core>(
			config, static_cast<ProtocolModule &>(*node->protocol.get()),
			static_cast<DecisionModule &>(*node->decision.get()));
		TestNode &ref = *node;
		nodes_[config.endpoint] = std::move(node);
		CoreOutputs out;
		ref.core->start(now_, out);
		collect(ref, out);
		return ref;
	}

	TestNode &node(const std::string &id) { return *nodes_.at("tcp://" + id); }
	double now() const { return now_; }

	// Advances time by `seconds` in steps of `tick`, delivering every message
	// sent within a step before the next one.
	void run(double seconds, double tick = 0.1)
	{
		double end = now_ + seconds - 1e-9;
		while (now_ < end) {
			now_ += tick;
			for (auto &[endpoint, node] : nodes_) {
				if (!node->up)
					continue;
				CoreOutputs out;
				node->core->tick(now_, out);
				collect(*node, out);
			}
			deliver();
		}
	}

	// Delivers raw bytes to a node as its adapter would.
	void inject(const std::string &id, const WireFrames &frames)
	{
		TestNode &n = node(id);
		Message m;
		CoreOutputs out;
		auto header = std::span(frames.header);
		auto body = std::span(reinterpret_cast<const uint8_t *>(frames.body.data()), frames.body.size());
		if (auto r = decodeMessage(header, body, kDefaultMaxMessageBytes, m))
			n.core->onRejected(Channel::Peer, *r, now_, out);
		else
			n.core->onPeerMessage(m, now_, out);
		collect(n, out);
		deliver();
	}

	uint64_t delivered() const { return delivered_; }
	// Every message of `type` sent so far, with the endpoint it went to.
	std::vector<std::pair<std::string, Message>> sent(const std::string &type) const
	{
		std::vector<std::pair<std::string, Message>> found;
		for (const auto &[endpoint, m] : log_)
			if (m["type"] == type)
				found.emplace_back(endpoint, m);
		return found;
	}
	std::vector<std::string> sentTo(const std::string &type) const
	{
		std::vector<std::string> to;
		for (const auto &[endpoint, m] : log_)
			if (m["type"] == type)
				to.push_back(endpoint);
		return to;
	}

private:
	void collect(TestNode &node, CoreOutputs &out)
	{
		for (CoreOutputs::Send &s : out.sends)
			queue_.emplace_back(s.endpoint, std::move(s.message));
		for (nlohmann::json &e : out.events)
			node.events.push_back(std::move(e));
	}

	void deliver()
	{
		while (!queue_.empty()) {
			auto [endpoint, message] = std::move(queue_.front());
			queue_.pop_front();
			log_.emplace_back(endpoint, message);
			auto it = nodes_.find(endpoint);
			if (it == nodes_.end() || !it->second->up)
				continue;
			// Through the codec, as on the wire.
			WireFrames frames = encodeMessage(message, 1);
			Message decoded;
			auto body = std::span(reinterpret_cast<const uint8_t *>(frames.body.data()),
					      frames.body.size());
			REQUIRE_FALSE(decodeMessage(frames.header, body, kDefaultMaxMessageBytes, decoded));
			CoreOutputs out;
			it->second->core->onPeerMessage(decoded, now_, out);
			collect(*it->second, out);
			++delivered_;
		}
	}

	double now_ = 100.0;
	uint64_t delivered_ = 0;
	std::map<std::string, std::unique_ptr<TestNode>> nodes_;
	std::deque<std::pair<std::string, Message>> queue_;
	std::vector<std::pair<std::string, Message>> log_;
};

inline CoreConfig agentConfig(const std::string &id, std::vector<std::string> seeds = {})
{
	CoreConfig c;
	c.id = id;
	for (std::string &s : seeds)
		c.seeds.push_back("tcp://" + s);
	c.seed = 42;
	return c;
}

// Is the undirected graph of "who lists whom as an alive peer" connected?
inline bool connected(TestNetwork &net, const std::vector<std::string> &ids)
{
	std::map<std::string, std::vector<std::string>> adj;
	for (const std::string &id : ids)
		for (const auto &[peer, entry] : net.node(id).core->peers()) {
			adj[id].push_back(peer);
			adj[peer].push_back(id);
		}
	std::vector<std::string> stack = {ids.front()};
	std::set<std::string> seen = {ids.front()};
	while (!stack.empty()) {
		std::string id = stack.back();
		stack.pop_back();
		for (const std::string &p : adj[id])
			if (seen.insert(p).second)
				stack.push_back(p);
	}
	return seen.size() == ids.size();
}

} // namespace malleo::test
