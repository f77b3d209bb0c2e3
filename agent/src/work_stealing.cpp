// SPDX-License-Identifier: Apache-2.0
// Work-stealing requests (seed 001, section 4): an idle or newly joined agent
// sends a WRM; each hop asks its decision module and either answers the origin
// or forwards with ttl − 1 to an unvisited peer; an unanswered origin retries
// with exponential backoff.
#include "work_stealing.h"

#include <algorithm>
#include <cmath>

namespace malleo {

namespace {

// The WRM passed on one hop further: from this agent, its TTL one less, with what its origin hosts (the keys the
// schema checked, nothing else).
Message forwarded(const Message &m, const WorkRequest &request, const std::vector<std::string> &visited,
		  const std::string &self, uint64_t id)
{
	Message forward = m;
	forward["from"] = self;
	forward["id"] = id;
	forward["ttl"] = request.ttl - 1;
	forward["hops"] = request.hops + 1;
	forward["visited"] = visited;
	if (!request.hosted.empty()) {
		nlohmann::json hosted = nlohmann::json::object();
		for (const auto &[app, share] : request.hosted)
			hosted[app] = {{"units", share.units}, {"load", share.load}};
		forward["hosted"] = std::move(hosted);
	}
	return forward;
}

} // namespace

WorkStealing::WorkStealing(CoreContext &ctx, ProtocolModule &protocol, DecisionModule &decision,
			   Membership &membership, WorkStealingHooks hooks)
	: ctx_(ctx), protocol_(protocol), decision_(decision), membership_(membership), hooks_(std::move(hooks))
{
}

void WorkStealing::start(double now)
{
	nextWrmAt_ = now;
	backoff_ = ctx_.config.backoffInitial;
}

void WorkStealing::joined()
{
	wrmOnJoinPending_ = ctx_.config.wrmOnJoin;
}

nlohmann::json WorkStealing::status(double now) const
{
	return {{"outstanding", wrm_.has_value()}, {"backoff", backoff_}, {"next_in", std::max(0.0, nextWrmAt_ - now)}};
}

// An agent knows only part of the overlay, so its estimate of N may be low:
// each unanswered attempt searches one ring further (expanding ring search).
unsigned WorkStealing::defaultTtl() const
{
	if (ctx_.config.ttl)
		return ctx_.config.ttl;
	double n = static_cast<double>(membership_.peers().size() + membership_.candidates().size() + 1);
	unsigned ttl = static_cast<unsigned>(std::ceil(std::log2(std::max(n, 2.0)))) + 2;
	return std::min(ttl + unansweredInRow_, kTtlMax);
}

void WorkStealing::tick(double now, CoreOutputs &out)
{
	if (wrm_ && now >= wrm_->sentAt + ctx_.config.wrmTimeout) {
		ctx_.counters.add("wrm.unanswered");
		ctx_.emit({{"type", "wrm_unanswered"}, {"wrm_id", wrm_->id}, {"retry_in", backoff_}}, now,
		     out);
		wrm_.reset();
		unansweredInRow_++;
		nextWrmAt_ = now + backoff_;
		backoff_ = std::min(backoff_ * 2, ctx_.config.backoffMax);
	}
	// A draining node asks for no work: it is giving its own away.
	if (!ctx_.config.wrmEnabled || hooks_.draining() || wrm_ || membership_.peers().empty() || now < nextWrmAt_)
		return;
	if (wrmOnJoinPending_) {
		wrmOnJoinPending_ = false;
		sendWrm(now, "join", out);
	} else if (ctx_.local.apw >= ctx_.config.idleThreshold) {
		sendWrm(now, "idle", out);
	}
}

void WorkStealing::sendWrm(double now, const char *why, CoreOutputs &out)
{
	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	std::vector<std::string> visited = {ctx_.config.id};
	auto hop = protocol_.nextHop(membership_.view(now, alive, candidates), visited);
	if (!hop || !membership_.peers().count(*hop))
		return;

	uint64_t id = nextWrmId_++;
	unsigned ttl = defaultTtl();
	Message m = ctx_.envelope("wrm");
	m["origin"] = ctx_.config.id;
	m["origin_endpoint"] = ctx_.config.endpoint;
	m["origin_profile"] = toJson(ctx_.local);
	m["wrm_id"] = id;
	m["ttl"] = ttl;
	m["hops"] = 1;
	m["visited"] = visited;
	if (nlohmann::json hosted = hooks_.hostedShares(); !hosted.empty())
		m["hosted"] = std::move(hosted);
	ctx_.send(membership_.peers().at(*hop).endpoint, std::move(m), out);

	if (unansweredInRow_)
		ctx_.counters.add("wrm.retries");
	wrm_ = OutstandingWrm{id, now};
	ctx_.counters.add("wrm.sent");
	ctx_.emit({{"type", "wrm_sent"}, {"wrm_id", id}, {"to", *hop}, {"ttl", ttl}, {"why", why},
	      {"apw", ctx_.local.apw}, {"attempt", unansweredInRow_ + 1}},
	     now, out);
}

void WorkStealing::onWrm(const Message &m, double now, CoreOutputs &out)
{
	WorkRequest request;
	if (std::string err = fromJson(m["origin_profile"], request.originProfile); !err.empty()) {
		hooks_.reject({"bad_field", "wrm: " + err}, m, now, out);
		return;
	}
	if (std::string err = membership_.endpointRefusal(m["origin_endpoint"].get<std::string>()); !err.empty()) {
		hooks_.reject({"endpoint_refused", "wrm: " + err}, m, now, out);
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

	if (request.origin == ctx_.config.id) {
		ctx_.counters.add("wrm.looped");
		return;
	}
	membership_.touch(m["from"].get<std::string>(), now);

	std::vector<PeerEntry> alive;
	std::vector<Candidate> candidates;
	OverlayView v = membership_.view(now, alive, candidates);
	std::vector<ApplicationInfo> apps = hooks_.applications();
	WorkVerdict verdict;
	if (hooks_.draining())
		verdict.reasons = {{"why", "this node is draining: it gives no work away but its own, by onDrain"}};
	else
		verdict = decision_.onWorkRequest(DecisionView{v, apps}, request);
	nlohmann::json event = {{"wrm_id", wrmId},	   {"origin", request.origin},
				{"hops", request.hops},	   {"ttl", request.ttl},
				{"reasons", verdict.reasons}};
	if (verdict.answer) {
		ctx_.counters.add("decisions.wrm_answer");
		Message reply = ctx_.envelope("wrm_reply");
		reply.update({{"wrm_id", wrmId}, {"endpoint", ctx_.config.endpoint}, {"profile", toJson(ctx_.local)},
			      {"hops", request.hops}, {"reasons", verdict.reasons}});
		ctx_.send(m["origin_endpoint"].get<std::string>(), std::move(reply), out);
		event["type"] = "wrm_answered";
		ctx_.emit(std::move(event), now, out);
		for (const Action &action : verdict.actions)
			hooks_.act(action, now, out);
		return;
	}

	ctx_.counters.add("decisions.wrm_pass");
	if (request.ttl <= 1) {
		ctx_.counters.add("wrm.ttl_expired");
		event["type"] = "wrm_expired";
		ctx_.emit(std::move(event), now, out);
		return;
	}
	visited.push_back(ctx_.config.id);
	auto hop = visited.size() < kVisitedMax ? protocol_.nextHop(v, visited) : std::nullopt;
	if (!hop || !membership_.peers().count(*hop)) {
		ctx_.counters.add("wrm.dead_end");
		event["type"] = "wrm_dead_end";
		ctx_.emit(std::move(event), now, out);
		return;
	}
	ctx_.send(membership_.peers().at(*hop).endpoint,
		  forwarded(m, request, visited, ctx_.config.id, ctx_.nextMessageId++), out);
	ctx_.counters.add("wrm.forwarded");
	event["type"] = "wrm_forwarded";
	event["to"] = *hop;
	ctx_.emit(std::move(event), now, out);
}

void WorkStealing::onWrmReply(const Message &m, double now, CoreOutputs &out)
{
	uint64_t wrmId = m["wrm_id"].get<uint64_t>();
	if (!wrm_ || wrm_->id != wrmId) {
		ctx_.counters.add("wrm.stale_replies");
		return;
	}
	ctx_.counters.add("wrm.answered");
	ctx_.emit({{"type", "wrm_reply"}, {"wrm_id", wrmId}, {"responder", m["from"]},
	      {"hops", m["hops"]}, {"rtt", now - wrm_->sentAt}, {"reasons", m["reasons"]}},
	     now, out);
	wrm_.reset();
	unansweredInRow_ = 0;
	backoff_ = ctx_.config.backoffInitial;
	nextWrmAt_ = now + ctx_.config.wrmCooldown;
}

} // namespace malleo
