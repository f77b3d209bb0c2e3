// SPDX-License-Identifier: Apache-2.0
#include "simulation.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "config.h"
#include "sim_random.h"

namespace malleo::sim {

namespace {

// Placement strings are written for runs of at most this many nodes.
constexpr std::size_t kPlacementNodes = 64;
// Component numbers for deriveSeed(): one stream each.
constexpr uint64_t kTransportStream = 1;
constexpr uint64_t kScenarioStream = 2;
constexpr uint64_t kAgentStreams = 1000;

std::vector<std::string> allModuleNames()
{
	std::vector<std::string> names;
	for (ModuleKind k : {ModuleKind::Profiling, ModuleKind::Protocol, ModuleKind::Decision})
		for (const std::string &n : builtinModuleNames(k))
			names.push_back(n);
	return names;
}

} // namespace

const char *executionName(Execution e)
{
	switch (e) {
	case Execution::Full:
		return "full";
	case Execution::Migration:
		return "migration";
	case Execution::Static:
		return "static";
	case Execution::Central:
		return "central";
	case Execution::Swap:
		return "swap";
	}
	return "unknown";
}

double RunResult::meanIteration() const
{
	if (iterations.empty())
		return 0.0;
	double sum = 0.0;
	for (const IterationRecord &r : iterations)
		sum += r.seconds;
	return sum / static_cast<double>(iterations.size());
}

double RunResult::messagesPerAgentSecond() const
{
	return agentSeconds > 0 ? static_cast<double>(transport.sent) / agentSeconds : 0.0;
}

std::string Simulation::setup(const Scenario &scenario, const RunOptions &options)
{
	scenario_ = scenario;
	options_ = options;
	std::vector<std::string> names = allModuleNames();
	names.push_back(options.decision);
	if (!options.protocol.empty())
		names.push_back(options.protocol);
	AgentConfig config;
	if (std::string e = parseConfig(scenario.agent, config, names); !e.empty())
		return "scenario key 'agent': " + e;
	agent_.core = config.core;
	agent_.decision = options.decision;
	agent_.protocol = options.protocol.empty() ? config.modules.protocol : options.protocol;
	agent_.protocolTable = config.moduleTable(agent_.protocol);
	agent_.decisionTable = config.moduleTable(agent_.decision);
	// Seed 000's "migration only": ios proposes whole-process migrations where it would split, and no merges.
	if (options.execution == Execution::Migration && agent_.decision == "ios")
		agent_.decisionTable["migration_only"] = true;
	// Seed 000's migration moves a process with its data: no node weights re-share the data on a move.
	if (options.execution == Execution::Migration)
		agent_.core.nodeWeights = false;
	agent_.modulePath = options.modulePath;
	for (const std::string &p : config.modules.path)
		agent_.modulePath.push_back(p);
	agent_.tick = config.tick;
	agent_.profileInterval = config.profileInterval;

	// Load and configure the modules once, so that a bad name or table is
	// one line before anything runs.
	for (auto [kind, name, table] : {std::tuple{ModuleKind::Protocol, agent_.protocol, agent_.protocolTable},
					 std::tuple{ModuleKind::Decision, agent_.decision, agent_.decisionTable}}) {
		ModuleLoadResult m = loadModule(kind, name, agent_.modulePath);
		if (!m.error.empty())
			return m.error;
		if (std::string e = m.handle.get()->configure(table); !e.empty())
			return e;
	}
	rng_.seed(deriveSeed(options.seed, kScenarioStream));
	transport_ = std::make_unique<SimTransport>(
		clock_, scenario.network, deriveSeed(options.seed, kTransportStream),
		[this](uint32_t to, const Message &m, const Rejection *rejection) {
			SimNode *node = to < nodes_.size() ? nodes_[to].get() : nullptr;
			if (!node || !node->up)
				return false;
			CoreOutputs out;
			if (rejection)
				node->core().onRejected(Channel::Peer, *rejection, clock_.now(), out);
			else
				node->core().onPeerMessage(m, clock_.now(), out);
			dispatch(to, out);
			return true;
		});
	result_.policy = options.policy;
	result_.decision = agent_.decision;
	result_.protocol = agent_.protocol;
	return {};
}

const NodeClass &Simulation::classFor(uint32_t index, const std::string &name) const
{
	if (!name.empty())
		for (const NodeClass &c : scenario_.classes)
			if (c.name == name)
				return c;
	double total = 0.0;
	for (const NodeClass &c : scenario_.classes)
		total += c.weight;
	if (!(total > 0))
		return scenario_.classes.front();
	// A low-discrepancy sequence: any prefix of the nodes has the classes in
	// about their proportions.
	double x = std::fmod((index + 0.5) * 0.6180339887498949, 1.0) * total;
	for (const NodeClass &c : scenario_.classes) {
		if (x < c.weight)
			return c;
		x -= c.weight;
	}
	return scenario_.classes.back();
}

SimNode &Simulation::addNode(double at, bool late, const std::string &nodeClass)
{
	const uint32_t index = static_cast<uint32_t>(nodes_.size());
	std::vector<uint32_t> pool;
	if (late)
		pool = upNodes();
	else
		for (uint32_t i = 0; i < index; ++i)
			pool.push_back(i);
	std::vector<std::string> seeds;
	for (int k = 0; k < scenario_.seedPeers && !pool.empty(); ++k) {
		size_t pick = uniformBelow(rng_, pool.size());
		seeds.push_back(nodeEndpoint(pool[pick]));
		pool.erase(pool.begin() + static_cast<long>(pick));
	}
	auto node = std::make_unique<SimNode>();
	std::string e = node->create(index, classFor(index, nodeClass), agent_, seeds,
				     deriveSeed(options_.seed, kAgentStreams + index));
	if (!e.empty() && error_.empty())
		error_ = e;
	node->joinedLate = late;
	nodes_.push_back(std::move(node));
	result_.nodesCreated++;
	clock_.at(at, [this, index]() {
		SimNode &n = *nodes_[index];
		CoreOutputs out;
		n.start(clock_.now(), out);
		dispatch(index, out);
		if (n.joinedLate && app_)
			app_->nodeJoined(index, clock_.now());
		clock_.after(agent_.tick, [this, index]() { tick(index); });
	});
	return *nodes_.back();
}

SimNode &Simulation::addReplayNode(const nlohmann::json &staticTable)
{
	const uint32_t index = static_cast<uint32_t>(nodes_.size());
	auto node = std::make_unique<SimNode>();
	std::string e = node->createFromStatic(index, staticTable, agent_);
	if (!e.empty() && error_.empty())
		error_ = e;
	nodes_.push_back(std::move(node));
	if (!error_.empty())
		return *nodes_.back();
	clock_.at(0.0, [this, index]() {
		CoreOutputs out;
		nodes_[index]->start(clock_.now(), out);
		dispatch(index, out);
		clock_.after(agent_.tick, [this, index]() { tick(index); });
	});
	return *nodes_.back();
}

void Simulation::tick(uint32_t index)
{
	SimNode &n = *nodes_[index];
	if (!n.up)
		return;
	const double now = clock_.now();
	if (now >= n.nextSample) {
		int64_t active = app_ && index < activeCount_.size() ? activeCount_[index] : 0;
		n.core().setLocalProfile(n.sample(now, active));
		n.nextSample = std::max(n.nextSample + agent_.profileInterval, now);
	}
	CoreOutputs out;
	n.core().tick(now, out);
	dispatch(index, out);
	clock_.after(agent_.tick, [this, index]() { tick(index); });
}

// "sim://n00042" is node 42: parsed rather than looked up, as every message needs it.
int64_t Simulation::indexOfEndpoint(const std::string &endpoint) const
{
	constexpr std::string_view prefix = "sim://n";
	if (endpoint.size() <= prefix.size() || endpoint.compare(0, prefix.size(), prefix) != 0)
		return -1;
	int64_t index = 0;
	for (size_t i = prefix.size(); i < endpoint.size(); ++i) {
		char c = endpoint[i];
		if (c < '0' || c > '9' || index > (int64_t{1} << 40))
			return -1;
		index = index * 10 + (c - '0');
	}
	return index < static_cast<int64_t>(nodes_.size()) && nodes_[static_cast<size_t>(index)]->endpoint() == endpoint
		       ? index
		       : -1;
}

void Simulation::dispatch(uint32_t from, CoreOutputs &out)
{
	for (const CoreOutputs::Send &s : out.sends) {
		if (onSend)
			onSend(from, s.endpoint, s.message);
		int64_t to = indexOfEndpoint(s.endpoint);
		if (to < 0)
			transport_->sendNowhere(s.message);
		else
			transport_->send(from, static_cast<uint32_t>(to), s.message);
	}
	for (const nlohmann::json &e : out.events) {
		if (onEvent)
			onEvent(from, e);
		const std::string &type = e["type"].get_ref<const std::string &>();
		if ((type == "drained" || type == "drain_deadline") && nodes_[from]->up && nodes_[from]->leaving)
			clock_.after(0.0, [this, from]() { goDown(from); });
		else if (type == "wrm_reply" && nodes_[from]->firstReplyAt < 0) {
			nodes_[from]->firstReplyAt = clock_.now();
			nodes_[from]->firstReplyHops = e.value("hops", int64_t{-1});
		}
	}
	out.clear();
}

void Simulation::deliverPeer(uint32_t node, const Message &message)
{
	WireFrames frames = encodeMessage(message, 1);
	Message decoded;
	auto body = std::span(reinterpret_cast<const uint8_t *>(frames.body.data()), frames.body.size());
	CoreOutputs out;
	SimNode &n = *nodes_[node];
	if (auto r = decodeMessage(frames.header, body, kDefaultMaxMessageBytes, decoded))
		n.core().onRejected(Channel::Peer, *r, clock_.now(), out);
	else
		n.core().onPeerMessage(decoded, clock_.now(), out);
	dispatch(node, out);
}

void Simulation::deliverLocal(uint32_t node, const Message &request,
			      std::function<void(const Message &)> reply)
{
	CoreOutputs out;
	Message r = nodes_[node]->core().onLocalRequest(request, clock_.now(), out);
	if (reply)
		reply(r);
	dispatch(node, out);
}

std::vector<uint32_t> Simulation::upNodes() const
{
	std::vector<uint32_t> up;
	for (const auto &n : nodes_)
		if (n->up)
			up.push_back(n->index());
	return up;
}

std::vector<uint32_t> Simulation::choose(int64_t count, const std::string &which)
{
	// A node already announced as leaving is not chosen again: it is as good as gone.
	std::vector<uint32_t> up = upNodes();
	std::erase_if(up, [&](uint32_t i) { return nodes_[i]->leaving; });
	std::vector<uint32_t> chosen;
	if (which == "last")
		std::reverse(up.begin(), up.end());
	while (static_cast<int64_t>(chosen.size()) < count && !up.empty()) {
		size_t pick = which == "random" ? uniformBelow(rng_, up.size()) : 0;
		chosen.push_back(up[pick]);
		up.erase(up.begin() + static_cast<long>(pick));
	}
	return chosen;
}

void Simulation::fire(const ScenarioEvent &e)
{
	if (e.kind == "join")
		join(e.count, e.nodeClass);
	else if (e.kind == "leave")
		leave(e.count, e.which);
	else if (e.kind == "load")
		load(e.count, e.which, e.load);
}

void Simulation::join(int64_t count, const std::string &nodeClass)
{
	for (int64_t i = 0; i < count; ++i) {
		addNode(clock_.now(), true, nodeClass);
		result_.lateJoins++;
	}
}

// A node that leaves says so first: its agent drains (the decision module's onDrain moves its processes off, as
// `malleo drain` asks of malleod), and it goes down once drained or at the agent's drain deadline. A node hosting
// none of the application goes at once.
void Simulation::leave(int64_t count, const std::string &which)
{
	for (uint32_t index : choose(count, which)) {
		SimNode &n = *nodes_[index];
		if (n.leaving)
			continue;
		n.leaving = true;
		if (!app_ || app_->activeOn(index) == 0) {
			goDown(index);
			continue;
		}
		result_.marks.push_back({clock_.now(), iteration_, "drain", app_->activeOn(index), n.id(), {}});
		Message drain = makeMessage("drain", "malleo-sim", 0);
		deliverLocal(index, drain, nullptr);
	}
}

void Simulation::goDown(uint32_t index)
{
	SimNode &n = *nodes_[index];
	if (!n.up)
		return;
	CoreOutputs out;
	n.core().leave(clock_.now(), out);
	dispatch(index, out);
	n.up = false;
	n.leftAt = clock_.now();
}

void Simulation::load(int64_t count, const std::string &which, double value)
{
	for (uint32_t index : choose(count, which))
		nodes_[index]->setLoad(clock_.now(), value);
}

void Simulation::refreshActive()
{
	activeCount_.assign(nodes_.size(), 0);
	if (!app_)
		return;
	for (const SimProcess &p : app_->processes())
		if (p.active && p.node < activeCount_.size()) {
			activeCount_[p.node]++;
			SimNode &n = *nodes_[p.node];
			if (n.firstWorkAt < 0)
				n.firstWorkAt = clock_.now();
		}
}

void Simulation::launchApplication()
{
	NodeAccess access;
	access.node = [this](uint32_t i) -> SimNode * {
		return i < nodes_.size() && nodes_[i]->up ? nodes_[i].get() : nullptr;
	};
	access.indexOf = [this](const std::string &id) -> int64_t {
		int64_t i = indexOfEndpoint("sim://" + id);
		return i < 0 || !nodes_[static_cast<size_t>(i)]->up ? -1 : i;
	};
	access.local = [this](uint32_t node, const Message &request) {
		CoreOutputs out;
		Message reply = nodes_[node]->core().onLocalRequest(request, clock_.now(), out);
		dispatch(node, out);
		return reply;
	};
	access.upNodes = [this]() { return upNodes(); };
	access.after = [this](double seconds, std::function<void()> f) { clock_.after(seconds, std::move(f)); };
	app_ = std::make_unique<SimApplication>(*scenario_.application, scenario_.network,
					       options_.execution, access);
	std::vector<uint32_t> up = upNodes();
	if (up.empty()) {
		finished_ = true;
		return;
	}
	app_->launch(clock_.now(), up);
	result_.appStart = clock_.now();
	startIteration();
}

void Simulation::startIteration()
{
	for (const ScenarioEvent &e : scenario_.events)
		if (e.iteration && *e.iteration == iteration_)
			fire(e);
	const int64_t before = app_->reconfigurationCount();
	const double cost =
	    app_->reconfigure(clock_.now(), iteration_, scenario_.application->iterations - iteration_);
	refreshActive();
	if (app_->activeProcesses() == 0) {
		finished_ = true; // every node it could use has gone
		return;
	}
	IterationTiming timing = app_->evaluate(clock_.now());
	const int64_t reconfigurations = app_->reconfigurationCount() - before;
	const double startedAt = clock_.now();
	messagesAtStart_ = transport_->stats().sent;
	clock_.after(cost + timing.seconds, [this, startedAt, cost, timing, reconfigurations]() {
		iterationDone(startedAt, cost, timing, reconfigurations);
	});
}

void Simulation::iterationDone(double startedAt, double reconfiguration, IterationTiming timing,
			       int64_t reconfigurations)
{
	const double now = clock_.now();
	IterationRecord r;
	r.iteration = iteration_;
	r.start = startedAt;
	r.seconds = now - startedAt;
	r.reconfiguration = reconfiguration;
	r.imbalance = timing.imbalance;
	r.processes = app_->activeProcesses();
	r.reconfigurations = reconfigurations;
	r.messages = transport_->stats().sent - messagesAtStart_;
	for (const auto &n : nodes_) {
		r.nodesUp += n->up;
		int64_t a = n->index() < activeCount_.size() ? activeCount_[n->index()] : 0;
		r.nodesUsed += a > 0;
		r.maxPerNode = std::max(r.maxPerNode, a);
	}
	if (nodes_.size() <= kPlacementNodes)
		for (const auto &n : nodes_) {
			if (!r.placement.empty())
				r.placement += ' ';
			int64_t a = n->index() < activeCount_.size() ? activeCount_[n->index()] : 0;
			r.placement += n->up ? std::to_string(a) : (n->started ? "x" : "-");
		}
	result_.iterations.push_back(r);
	app_->report(now, r.seconds, timing);
	iteration_++;
	if (iteration_ >= scenario_.application->iterations) {
		result_.appEnd = now;
		finished_ = true;
		return;
	}
	startIteration();
}

RunResult Simulation::run()
{
	const int64_t count = options_.nodes ? options_.nodes : scenario_.nodes;
	for (int64_t i = 0; i < count; ++i)
		addNode(scenario_.startup * static_cast<double>(i) / static_cast<double>(count), false, {});
	if (scenario_.application)
		clock_.at(scenario_.application->start, [this]() { launchApplication(); });
	for (const ScenarioEvent &e : scenario_.events)
		if (e.at)
			for (int64_t k = 0; k < e.repeat; ++k)
				clock_.at(*e.at + e.every * static_cast<double>(k), [this, &e]() { fire(e); });

	uint64_t seen = 0;
	result_.events = clock_.run(scenario_.duration, [this, &seen]() {
		if (onProgress && seen++ % 4096 == 0)
			onProgress(clock_.now(), scenario_.duration);
		return finished_ || !error_.empty();
	});
	const double end = clock_.now();
	result_.simulated = end;
	result_.transport = transport_->stats();
	if (app_) {
		result_.reconfigurations = app_->reconfigurations();
		result_.refused = app_->refused();
		result_.marks.insert(result_.marks.end(), app_->marks().begin(), app_->marks().end());
		std::stable_sort(result_.marks.begin(), result_.marks.end(),
				 [](const ReconfigurationMark &a, const ReconfigurationMark &b) { return a.at < b.at; });
	}
	for (const auto &n : nodes_) {
		if (n->started)
			result_.agentSeconds += (n->leftAt >= 0 ? n->leftAt : end) - n->startedAt;
		if (n->joinedLate && n->started) {
			if (n->firstReplyAt >= 0) {
				result_.joinToReply.push_back(n->firstReplyAt - n->startedAt);
				result_.replyHops.push_back(n->firstReplyHops);
			}
			if (n->firstWorkAt >= 0)
				result_.joinToWork.push_back(n->firstWorkAt - n->startedAt);
		}
		const nlohmann::json counters = n->core().counters().toJson();
		for (const auto &[name, value] : counters.items())
			result_.counters[name] += value.get<uint64_t>();
	}
	return result_;
}

} // namespace malleo::sim
