// SPDX-License-Identifier: Apache-2.0
// Protocol module "p2p": a flat overlay with a bounded random view.
//
// Each agent chooses at most `view_size` peers (its links; a peer that chose it
// is linked too), refills its view from peers it would otherwise lose and then
// from the addresses gossip brings, and every `shuffle_interval` swaps one member
// for a gossiped address so that the overlay keeps mixing. A WRM goes to the unvisited peer that
// looks most loaded.
//
// Options (table "p2p"):
//   view_size         8    peers heartbeated
//   gossip_fanout     1    peers gossiped to per round
//   gossip_size       8    addresses carried per gossip message
//   shuffle_interval  5.0  seconds between view shuffles (0: never)
#include <malleo/config_table.h>
#include <malleo/protocol_module.h>

#include "../common/peer_choice.h"

namespace malleo {

namespace {

class P2pProtocol : public ProtocolModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		ConfigTable t(table, "p2p");
		t.integer("view_size", viewSize_, 1, 4096);
		t.integer("gossip_fanout", gossipFanout_, 0, 64);
		t.integer("gossip_size", gossipSize_, 1, 64);
		t.number("shuffle_interval", shuffleInterval_, 0, 86400);
		t.finish();
		return t.error();
	}

	std::string group(std::string_view) const override { return {}; }

	std::vector<std::string> chooseView(const OverlayView &view) override
	{
		std::vector<std::string> keep, unlinked, linked, fresh, pending;
		for (const PeerEntry &p : view.alive)
			(p.inView ? keep : p.inPeerView ? linked : unlinked).push_back(p.id);
		for (const Candidate &c : view.candidates)
			(c.contacted ? pending : fresh).push_back(c.id);

		std::mt19937_64 &rng = *view.rng;
		if (keep.size() > viewSize_)
			keep = protocol::sample(std::move(keep), viewSize_, rng);

		// Shuffle: one member makes room for an address gossip brought, so
		// the overlay keeps mixing whatever the seeds were.
		if (shuffleInterval_ > 0 && view.now >= nextShuffle_) {
			nextShuffle_ = view.now + shuffleInterval_;
			if (keep.size() == viewSize_ && !fresh.empty()) {
				std::uniform_int_distribution<std::size_t> pick(0, keep.size() - 1);
				keep.erase(keep.begin() + static_cast<long>(pick(rng)));
				keep.push_back(protocol::sample(fresh, 1, rng).front());
			}
		}

		// Fill first with peers that would otherwise be let go (a seed that
		// welcomed us), then with addresses from gossip, and only then with
		// peers that keep the link to us anyway. Hellos on their way count
		// toward the view, so a join does not greet every address it learns.
		for (auto *from : {&unlinked, &fresh, &linked}) {
			std::size_t used = keep.size() + pending.size();
			std::size_t room = viewSize_ > used ? viewSize_ - used : 0;
			for (std::string &id : protocol::sample(std::move(*from), room, rng))
				keep.push_back(std::move(id));
		}
		return keep;
	}

	Gossip chooseGossip(const OverlayView &view) override
	{
		std::vector<std::string> inView, alive;
		for (const PeerEntry &p : view.alive) {
			alive.push_back(p.id);
			if (p.inView)
				inView.push_back(p.id);
		}
		Gossip g;
		g.targets = protocol::sample(inView.empty() ? alive : inView, gossipFanout_, *view.rng);
		g.carry = protocol::gossipSample(view, gossipSize_);
		return g;
	}

	std::optional<std::string> nextHop(const OverlayView &view,
					   std::span<const std::string> visited) override
	{
		return protocol::mostLoadedUnvisited(view, visited, [](const PeerEntry &) { return true; });
	}

private:
	std::size_t viewSize_ = 8;
	std::size_t gossipFanout_ = 1;
	std::size_t gossipSize_ = 8;
	double shuffleInterval_ = 5.0;
	double nextShuffle_ = 0.0;
};

} // namespace

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Protocol, "p2p", "1.0", malleo::P2pProtocol)
