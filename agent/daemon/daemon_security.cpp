// SPDX-License-Identifier: Apache-2.0
// The daemon's side of authentication (docs/deployment.md): CURVE on the TCP sockets, the ZAP handler that lets in
// the nodes of security.allowed_keys, and the check that a peer message comes from the node it names (by its `from`
// and by its connection's routing id).
#include "daemon.h"

#include <fmt/format.h>
#include <zmq.h>

namespace malleo {

namespace {

// Learned endpoints kept at most: a peer cannot grow the table without bound.
constexpr std::size_t kMaxLearnedEndpoints = 4096;

void remember(std::map<std::string, std::string> &table, const std::string &endpoint, const std::string &node)
{
	if (table.size() >= kMaxLearnedEndpoints && !table.count(endpoint))
		table.clear(); // what matters is asked again soon, and heard again from the nodes themselves
	table[endpoint] = node;
}

} // namespace

std::string Daemon::setUpSecurity(bool remote)
{
	if (std::string problem = securityProblem(config_); !problem.empty())
		return problem;
	if (!config_.security.curve()) {
		if (config_.security.plain)
			log_->warn("security.plain: peers and coordinators are not authenticated; anyone who reaches {} is "
				   "heard (make keys with `malleo keygen`, docs/deployment.md)",
				   config_.listen);
		return {};
	}
	if (!zmq_has("curve"))
		return "security.secret_key is set but this libzmq has no CURVE (built without libsodium)";
	CurveKeyPair keys;
	if (std::string e = readKeyFile(config_.security.secretKeyFile, keys.secretKey); !e.empty())
		return "security.secret_key: " + e;
	char publicKey[41] = {};
	if (zmq_curve_public(publicKey, keys.secretKey.c_str()) != 0)
		return fmt::format("security.secret_key: key file '{}': not a CURVE secret key",
				   config_.security.secretKeyFile);
	keys.publicKey = publicKey;
	if (std::string e = keyRing_.load(); !e.empty())
		return "security.allowed_keys: " + e;
	if (keyRing_.size() == 0)
		return "security.allowed_keys: no public key (<node-id>.pub) found; nobody could talk to this agent";
	if (std::string own = keyRing_.nodeOf(keys.publicKey); own != config_.core.id)
		log_->warn("this node's public key is {} in security.allowed_keys: peers that use the same set will "
			   "refuse {}",
			   own.empty() ? "not" : "node '" + own + "''s", config_.core.id);
	for (const std::string &seed : config_.core.seeds)
		if (!config_.seedNodes.count(seed))
			log_->warn("seed peer '{}' names no node: with CURVE it is greeted only once another node says "
				   "which node listens there; write it NODE@{}",
				   seed, seed);
	transport_->enableCurve(std::move(keys), remote);
	log_->info("CURVE on: {} nodes' keys allowed in", keyRing_.size());
	return {};
}

void Daemon::handleZap()
{
	for (int i = 0; i < 256; ++i) {
		std::optional<ZapRequest> request = transport_->receiveZap();
		if (!request)
			return;
		refreshKeys();
		const std::string node = request->mechanism == "CURVE" ? keyRing_.nodeOf(request->publicKey) : "";
		if (!node.empty()) {
			transport_->replyZap(*request, true, node, "OK");
			continue;
		}
		transport_->replyZap(*request, false, "", "key not allowed");
		const bool app = request->domain == kZapDomainApp;
		core_->count(app ? "auth.refused.remote" : "auth.refused.peer");
		LogLimiter::Verdict v = authLog_.admit(request->address, now());
		if (v.suppressedBefore)
			log_->warn("{} more handshakes from {} refused in the last minute, not logged", v.suppressedBefore,
				   request->address);
		if (v.log)
			log_->warn("refused a {} client from {}: its public key {} is not in security.allowed_keys",
				   app ? "remote application endpoint" : "peer inbox", request->address,
				   request->publicKey.empty() ? "(none)" : request->publicKey);
	}
}

void Daemon::refreshKeys()
{
	if (std::string e = keyRing_.refresh(); !e.empty())
		if (rejectionLog_.admit("allowed_keys", now()).log)
			log_->error("security.allowed_keys: {}; the keys read before still apply", e);
}

std::optional<Rejection> Daemon::checkKeyAllowed(const Incoming &in)
{
	if (in.userId.empty())
		return std::nullopt; // no key: checkSender refuses a peer message, the handshake a remote one
	refreshKeys(); // a stat of the directory per message: a revocation holds from the next message on
	if (!keyRing_.keyOf(in.userId).empty())
		return std::nullopt;
	return Rejection{"revoked", fmt::format("node '{}' sent on a connection made with a key no longer in "
						"security.allowed_keys",
						in.userId)};
}

std::optional<Rejection> Daemon::checkSender(const Incoming &in)
{
	// A routing id is the client's to choose; one that names another allowed node is a claim to be that node,
	// refused whatever comes with it. (The peer inbox gives a routing id no power: zmq_transport.cpp.)
	if (!in.userId.empty() && in.routingId != in.userId && !keyRing_.keyOf(in.routingId).empty())
		return Rejection{"routing_id_mismatch",
				 fmt::format("a connection of node '{}' that claims node '{}''s routing id", in.userId,
					     printableText(in.routingId, kMaxIdLength))};
	const auto from = in.message.find("from");
	if (!in.message.is_object() || from == in.message.end() || !from->is_string())
		return std::nullopt; // the schema refuses it
	if (in.userId.empty())
		return Rejection{"unauthenticated", "a message without the sender's authenticated node"};
	if (*from == in.userId)
		return std::nullopt;
	return Rejection{"from_mismatch",
			 fmt::format("a {} from '{}' sent with the key of node '{}'",
				     printableText(in.message.value("type", nlohmann::json()).dump(), 32),
				     printableText(from->get<std::string>(), kMaxIdLength), in.userId)};
}

void Daemon::learnEndpoints(const Incoming &in)
{
	if (!transport_->curve() || !in.message.is_object())
		return;
	const auto text = [&](const nlohmann::json &j, const char *key) -> std::string {
		auto it = j.find(key);
		return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
	};
	// Its own endpoint, said by the node itself (hello, welcome, heartbeat), is what its key is checked against.
	if (std::string endpoint = text(in.message, "endpoint"); !endpoint.empty())
		remember(nodeSaidAt_, endpoint, in.userId);
	// Others' endpoints as a peer knows them: a wrong claim costs a handshake that fails, never a message to
	// another node, as the connection there is made with the claimed node's public key.
	if (auto peers = in.message.find("peers"); peers != in.message.end() && peers->is_array())
		for (const nlohmann::json &p : *peers)
			if (p.is_object() && !text(p, "id").empty() && !text(p, "endpoint").empty())
				remember(nodeClaimedAt_, text(p, "endpoint"), text(p, "id"));
	if (std::string origin = text(in.message, "origin"), at = text(in.message, "origin_endpoint");
	    !origin.empty() && !at.empty())
		remember(nodeClaimedAt_, at, origin);
}

std::string Daemon::serverKeyFor(const std::string &endpoint)
{
	std::string node;
	for (const auto &[id, peer] : core_->peers())
		if (peer.endpoint == endpoint) {
			node = id;
			break;
		}
	for (const auto *table : {&nodeSaidAt_, &config_.seedNodes, &nodeClaimedAt_}) {
		if (!node.empty())
			break;
		if (auto it = table->find(endpoint); it != table->end())
			node = it->second;
	}
	if (node.empty())
		return {};
	std::string key = keyRing_.keyOf(node);
	// A node whose .pub was added since the keys were read: read them again (once the directory changed).
	if (key.empty() && keyRing_.refresh().empty())
		key = keyRing_.keyOf(node);
	return key;
}

} // namespace malleo
