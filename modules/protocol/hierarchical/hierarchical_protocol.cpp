// SPDX-License-Identifier: Apache-2.0
// Protocol module "hierarchical": agents in groups, each group led by its
// smallest id.
//
// A member heartbeats its leader and a few siblings; a leader heartbeats its
// members and the leaders of the other groups it knows. A WRM stays in its group
// while unvisited siblings remain, then climbs to the leader, which passes it to
// another group. Leadership needs no election: every agent derives it from the
// ids it knows, and a failed leader is replaced as soon as its timeout drops it.
//
// Options (table "hierarchical"):
//   group          ""   this agent's group; empty: "g<k>", k = FNV-1a(id) mod groups
//   groups         4    number of groups when `group` is empty
//   siblings       4    siblings a member heartbeats
//   members_max    64   members a leader heartbeats
//   leaders_max    8    other groups' leaders a leader heartbeats
//   gossip_size    8    addresses carried per gossip message
#include <map>

#include <malleo/config_table.h>
#include <malleo/protocol_module.h>

#include "../common/peer_choice.h"

namespace malleo {

namespace {

uint64_t fnv1a(std::string_view s)
{
	uint64_t h = 1469598103934665603ull;
	for (unsigned char c : s) {
		h ^= c;
		h *= 1099511628211ull;
	}
	return h;
}

class HierarchicalProtocol : public ProtocolModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		ConfigTable t(table, "hierarchical");
		t.string("group", group_, true);
		t.integer("groups", groups_, 1, 1 << 20);
		t.integer("siblings", siblings_, 0, 1024);
		t.integer("members_max", membersMax_, 1, 1 << 16);
		t.integer("leaders_max", leadersMax_, 0, 1024);
		t.integer("gossip_size", gossipSize_, 1, 64);
		t.finish();
		return t.error();
	}

	std::string group(std::string_view selfId) const override
	{
		if (!group_.empty())
			return group_;
		return "g" + std::to_string(fnv1a(selfId) % groups_);
	}

	std::vector<std::string> chooseView(const OverlayView &view) override
	{
		std::string self(view.self), mine(view.group);
		// Every group's representative: the smallest id known in it.
		std::map<std::string, std::string> leaders;
		auto consider = [&](const std::string &id, const std::string &g) {
			auto [it, inserted] = leaders.try_emplace(g, id);
			if (!inserted && id < it->second)
				it->second = id;
		};
		consider(self, mine);
		for (const PeerEntry &p : view.alive)
			consider(p.id, p.group);
		for (const Candidate &c : view.candidates)
			consider(c.id, c.group);

		std::vector<std::string> chosen, members;
		for (const PeerEntry &p : view.alive)
			if (p.group == mine)
				members.push_back(p.id);
		for (const Candidate &c : view.candidates)
			if (c.group == mine && !c.contacted)
				members.push_back(c.id);

		if (leaders[mine] == self) {
			for (std::string &id : protocol::sample(members, membersMax_, *view.rng))
				chosen.push_back(std::move(id));
			std::size_t n = 0;
			for (const auto &[g, leader] : leaders)
				if (g != mine && n++ < leadersMax_)
					chosen.push_back(leader);
			return chosen;
		}

		chosen.push_back(leaders[mine]);
		// Keep the siblings already in view; fill up at random.
		std::vector<std::string> fresh;
		for (const std::string &id : members) {
			if (id == leaders[mine])
				continue;
			bool inView = false;
			for (const PeerEntry &p : view.alive)
				if (p.id == id && p.inView)
					inView = true;
			if (inView && chosen.size() <= siblings_)
				chosen.push_back(id);
			else
				fresh.push_back(id);
		}
		std::size_t room = siblings_ + 1 > chosen.size() ? siblings_ + 1 - chosen.size() : 0;
		for (std::string &id : protocol::sample(std::move(fresh), room, *view.rng))
			chosen.push_back(std::move(id));
		return chosen;
	}

	Gossip chooseGossip(const OverlayView &view) override
	{
		std::vector<std::string> inView;
		for (const PeerEntry &p : view.alive)
			if (p.inView)
				inView.push_back(p.id);
		Gossip g;
		g.targets = protocol::sample(inView, 1, *view.rng);
		g.carry = protocol::gossipSample(view, gossipSize_);
		return g;
	}

	std::optional<std::string> nextHop(const OverlayView &view,
					   std::span<const std::string> visited) override
	{
		std::string mine(view.group);
		if (auto sibling = protocol::mostLoadedUnvisited(
			    view, visited, [&](const PeerEntry &p) { return p.group == mine; }))
			return sibling;
		if (auto linked = protocol::mostLoadedUnvisited(
			    view, visited, [](const PeerEntry &p) { return p.inView; }))
			return linked;
		return protocol::mostLoadedUnvisited(view, visited,
						     [](const PeerEntry &) { return true; });
	}

private:
	std::string group_;
	std::size_t groups_ = 4;
	std::size_t siblings_ = 4;
	std::size_t membersMax_ = 64;
	std::size_t leadersMax_ = 8;
	std::size_t gossipSize_ = 8;
};

} // namespace

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Protocol, "hierarchical", "1.0", malleo::HierarchicalProtocol)
