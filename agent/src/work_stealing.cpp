// SPDX-License-Identifier: Apache-2.0
// Work-stealing requests (seed 001, section 4): an idle or newly joined agent
// sends a WRM; each hop asks its decision module and either answers the origin
// or forwards with ttl − 1 to an unvisited peer; an unanswered origin retries
// with exponential backoff.
#include "core.h"

#include <algorithm>
#include <cmath>

namespace malleo {

// An agent knows only part of the overlay, so its estimate of N may be low:
// each unanswered attempt searches one ring further (expanding ring search).
unsigned Core::defaultTtl() const
{
	if (config_.ttl)
		return config_.ttl;
	double n = static_cast<double>(peers_.size() + candidates_.size() + 1);
	unsigned ttl = static_cast<unsigned>(std::ceil(std::log2(std::max(n, 2.0)))) + 2;
	return std::min(ttl + unansweredInRow_, kTtlMax);
}

void Core::workStealing(double now, CoreOutputs &out)
{
	if (wrm_ && now >= wrm_->sentAt + config_.wrmTimeout) {
		counters_.add("wrm.unanswered");
		emit({{"type", "wrm_unanswered"}, {"wrm_id", wrm_->id}, {"retry_in", backoff_}}, now,
		     out);
		wrm_.reset();
		unansweredInRow_++;
		nextWrmAt_ = now + backoff_;
		backoff_ = std::min(backoff_ * 2, config_.backoffMax);
	}
	// A draining node asks for no work: it is giving its own away.
	if (!config_.wrmEnabled || draining_ || wrm_ || peers_.empty() || now < nextWrmAt_)
		return;
	if (wrmOnJoinPending_) {
		wrmOnJoinPending_ = false;
		sendWrm(now, "join", out);
	} else if (local_.apw >= config_.idleThreshold) {
		sendWrm(now, "idle", out);
	}
}

void Core::sendWrm(double now, const char *why, CoreOutputs &out)
{
	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	std::vector<std::string> visited = {config_.id};
	auto hop = protocol_.nextHop(view(now, alive, candidates), visited);
	if (!hop || !peers_.count(*hop))
		return;

	uint64_t id = nextWrmId_++;
	unsigned ttl = defaultTtl();
	Message m = envelope("wrm");
	m["origin"] = config_.id;
	m["origin_endpoint"] = config_.endpoint;
	m["origin_profile"] = toJson(local_);
	m["wrm_id"] = id;
	m["ttl"] = ttl;
	m["hops"] = 1;
	m["visited"] = visited;
	if (nlohmann::json hosted = hostedShares(); !hosted.empty())
		m["hosted"] = std::move(hosted);
	send(peers_.at(*hop).endpoint, std::move(m), out);

	if (unansweredInRow_)
		counters_.add("wrm.retries");
	wrm_ = OutstandingWrm{id, now};
	counters_.add("wrm.sent");
	emit({{"type", "wrm_sent"}, {"wrm_id", id}, {"to", *hop}, {"ttl", ttl}, {"why", why},
	      {"apw", local_.apw}, {"attempt", unansweredInRow_ + 1}},
	     now, out);
}

// What this node hosts of each application, its active processes' data units (seed 001's Nb_i) and the cores they use:
// the answering node shares the work of both (eq. 1) and does not give more to a node that already holds its share.
// Every application with active processes here, not only those known to be malleable: a non-root agent learns that
// from the root's heartbeat, which may come after its first request, and the answering node weighs only applications
// malleable in its own view. At most kHostedMax, by id.
nlohmann::json Core::hostedShares() const
{
	nlohmann::json hosted = nlohmann::json::object();
	for (const auto &[id, app] : apps_) {
		if (hosted.size() >= kHostedMax)
			break;
		int64_t units = 0;
		double load = 0.0;
		for (const ProcessInfo &p : app.local)
			if (p.active) {
				units += p.units;
				load += p.ownLoad;
			}
		// Within the schema's ranges, or the whole request would be refused.
		if (units > 0)
			hosted[id] = {{"units", std::min(units, static_cast<int64_t>(kUnitsMax))},
				      {"load", std::min(load, kProfileCoresMax)}};
	}
	return hosted;
}

void Core::onWrm(const Message &m, double now, CoreOutputs &out)
{
	WorkRequest request;
	if (std::string err = fromJson(m["origin_profile"], request.originProfile); !err.empty()) {
		reject(Channel::Peer, {"bad_field", "wrm: " + err}, &m, now, out);
		return;
	}
	if (std::string err = endpointRefusal(m["origin_endpoint"].get<std::string>()); !err.empty()) {
		reject(Channel::Peer, {"endpoint_refused", "wrm: " + err}, &m, now, out);
		return;
	}
	std::vector<std::string> visited = m["visited"].get<std::vector<std::string>>(); // ids: the schema checked
	request.origin = m["origin"].get<std::string>();
	request.ttl = m["ttl"].get<unsigned>();
	request.hops = m["hops"].get<unsigned>();
	uint64_t wrmId = m["wrm_id"].get<uint64_t>();
	if (const auto said = m.find("hosted"); said != m.end())
		for (const auto &[app, share] : said->items())
			request.hosted[app] = {share["units"].get<int64_t>(), share["load"].get<double>()};

	if (request.origin == config_.id) {
		counters_.add("wrm.looped");
		return;
	}
	if (auto it = peers_.find(m["from"].get<std::string>()); it != peers_.end())
		it->second.lastHeard = now;

	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	OverlayView v = view(now, alive, candidates);
	std::vector<ApplicationInfo> apps = applicationList();
	WorkVerdict verdict;
	if (draining_)
		verdict.reasons = {{"why", "this node is draining: it gives no work away but its own, by onDrain"}};
	else
		verdict = decision_.onWorkRequest(DecisionView{v, apps}, request);
	nlohmann::json event = {{"wrm_id", wrmId},	   {"origin", request.origin},
				{"hops", request.hops},	   {"ttl", request.ttl},
				{"reasons", verdict.reasons}};
	if (verdict.answer) {
		counters_.add("decisions.wrm_answer");
		Message reply = envelope("wrm_reply");
		reply["wrm_id"] = wrmId;
		reply["endpoint"] = config_.endpoint;
		reply["profile"] = toJson(local_);
		reply["hops"] = request.hops;
		reply["reasons"] = verdict.reasons;
		send(m["origin_endpoint"].get<std::string>(), std::move(reply), out);
		event["type"] = "wrm_answered";
		emit(std::move(event), now, out);
		for (const Action &action : verdict.actions)
			emitAction(action, "wrm", now, out);
		return;
	}

	counters_.add("decisions.wrm_pass");
	if (request.ttl <= 1) {
		counters_.add("wrm.ttl_expired");
		event["type"] = "wrm_expired";
		emit(std::move(event), now, out);
		return;
	}
	visited.push_back(config_.id);
	auto hop = visited.size() < kVisitedMax ? protocol_.nextHop(v, visited) : std::nullopt;
	if (!hop || !peers_.count(*hop)) {
		counters_.add("wrm.dead_end");
		event["type"] = "wrm_dead_end";
		emit(std::move(event), now, out);
		return;
	}
	Message forward = m;
	forward["from"] = config_.id;
	forward["id"] = nextMessageId_++;
	forward["ttl"] = request.ttl - 1;
	forward["hops"] = request.hops + 1;
	forward["visited"] = visited;
	if (!request.hosted.empty()) {
		nlohmann::json hosted = nlohmann::json::object(); // the keys the schema checked, nothing else
		for (const auto &[app, share] : request.hosted)
			hosted[app] = {{"units", share.units}, {"load", share.load}};
		forward["hosted"] = std::move(hosted);
	}
	send(peers_.at(*hop).endpoint, std::move(forward), out);
	counters_.add("wrm.forwarded");
	event["type"] = "wrm_forwarded";
	event["to"] = *hop;
	emit(std::move(event), now, out);
}

void Core::onWrmReply(const Message &m, double now, CoreOutputs &out)
{
	uint64_t wrmId = m["wrm_id"].get<uint64_t>();
	if (!wrm_ || wrm_->id != wrmId) {
		counters_.add("wrm.stale_replies");
		return;
	}
	counters_.add("wrm.answered");
	emit({{"type", "wrm_reply"}, {"wrm_id", wrmId}, {"responder", m["from"]},
	      {"hops", m["hops"]}, {"rtt", now - wrm_->sentAt}, {"reasons", m["reasons"]}},
	     now, out);
	wrm_.reset();
	unansweredInRow_ = 0;
	backoff_ = config_.backoffInitial;
	nextWrmAt_ = now + config_.wrmCooldown;
}

} // namespace malleo
