// SPDX-License-Identifier: Apache-2.0
#include "sim_node.h"

#include <algorithm>

#include <fmt/format.h>

namespace malleo::sim {

namespace {

// Context switches per second of a core that is not oversubscribed, and per
// runnable task beyond the cores: the scheduler's 4 ms slices.
constexpr double kBaseCtxsw = 200.0;
constexpr double kCtxswPerExcessTask = 250.0;

} // namespace

std::string nodeId(uint32_t index)
{
	return fmt::format("n{:05}", index);
}

std::string nodeEndpoint(uint32_t index)
{
	return fmt::format("sim://{}", nodeId(index));
}

std::string SimNode::create(uint32_t index, const NodeClass &nodeClass, const AgentTemplate &agent,
			    std::vector<std::string> seeds, uint64_t seed)
{
	index_ = index;
	id_ = nodeId(index);
	endpoint_ = nodeEndpoint(index);
	cores_ = nodeClass.cores;
	speed_ = nodeClass.speed;
	schedule_ = {{0.0, nodeClass.load}};
	for (const LoadStep &s : nodeClass.trace)
		if (s.at > 0)
			schedule_.push_back(s);
		else
			schedule_.front().load = s.load;

	return createAgent(agent, std::move(seeds), seed, nullptr);
}

std::string SimNode::createFromStatic(uint32_t index, const nlohmann::json &staticTable,
				      const AgentTemplate &agent)
{
	index_ = index;
	id_ = agent.core.id.empty() ? nodeId(index) : agent.core.id;
	endpoint_ = nodeEndpoint(index);
	overlay_ = false;
	return createAgent(agent, agent.core.seeds, agent.core.seed, &staticTable);
}

std::string SimNode::createAgent(const AgentTemplate &agent, std::vector<std::string> seeds,
				 uint64_t seed, const nlohmann::json *staticTable)
{
	ModuleLoadResult p = loadModule(ModuleKind::Profiling, "static", agent.modulePath);
	ModuleLoadResult r = loadModule(ModuleKind::Protocol, agent.protocol, agent.modulePath);
	ModuleLoadResult d = loadModule(ModuleKind::Decision, agent.decision, agent.modulePath);
	for (ModuleLoadResult *m : {&p, &r, &d})
		if (!m->error.empty())
			return m->error;
	profiling_ = std::move(p.handle);
	protocol_ = std::move(r.handle);
	decision_ = std::move(d.handle);
	if (std::string e = protocol_.get()->configure(agent.protocolTable); !e.empty())
		return e;
	if (std::string e = decision_.get()->configure(agent.decisionTable); !e.empty())
		return e;
	std::string e = staticTable ? profiling_.get()->configure(*staticTable) : reconfigureProfiling();
	if (!e.empty())
		return e;
	if (std::string e = static_cast<ProfilingModule *>(profiling_.get())->start(); !e.empty())
		return e;
	if (staticTable) {
		NodeProfile base = static_cast<ProfilingModule *>(profiling_.get())->sample(0.0);
		static_cast<ProfilingModule *>(profiling_.get())->start();
		cores_ = base.cores;
		speed_ = base.pw / std::max(1, base.cores);
	}

	CoreConfig config = agent.core;
	config.id = id_;
	config.endpoint = endpoint_;
	config.seeds = std::move(seeds);
	config.seed = seed;
	// The cores ask the application's root agent for each action, as malleod does: the simulated application's
	// bridge polls it for the commands (sim_bridge.cpp).
	config.act = true;
	core_ = std::make_unique<Core>(config, static_cast<ProtocolModule &>(*protocol_.get()),
				       static_cast<DecisionModule &>(*decision_.get()));
	core_->setNodeDescription(static_cast<ProfilingModule *>(profiling_.get())->describe());
	// The decision module's ABI minor, as malleod passes it: the core calls no hook newer than the module.
	core_->setModuleNames({{"profiling", "static"},
			       {"protocol", agent.protocol},
			       {"decision", {{"name", agent.decision}, {"abi_minor", decision_.info().abiMinor}}}});
	return {};
}

// The external load becomes the static module's schedule: its apw is what
// the load leaves.
std::string SimNode::reconfigureProfiling()
{
	nlohmann::json schedule = nlohmann::json::array();
	for (std::size_t i = 1; i < schedule_.size(); ++i)
		schedule.push_back({{"at", schedule_[i].at}, {"apw", 1.0 - schedule_[i].load}});
	nlohmann::json table = {{"pw", cores_ * speed_},
				{"cores", cores_},
				{"apw", 1.0 - schedule_.front().load},
				{"schedule", schedule}};
	return profiling_.get()->configure(table);
}

void SimNode::start(double now, CoreOutputs &out)
{
	up = true;
	started = true;
	startedAt = now;
	nextSample = now;
	core_->setLocalProfile(sample(now, 0));
	core_->start(now, out);
}

double SimNode::externalLoad(double now) const
{
	double load = schedule_.front().load;
	for (const LoadStep &s : schedule_)
		if (s.at <= now - startedAt)
			load = s.load;
	return load;
}

void SimNode::setLoad(double now, double load)
{
	double at = now - startedAt;
	// The static schedule's steps must increase strictly: a second change at
	// the same instant replaces the first.
	while (schedule_.size() > 1 && schedule_.back().at >= at)
		schedule_.pop_back();
	if (at <= 0)
		schedule_.front().load = load;
	else
		schedule_.push_back({at, load});
	reconfigureProfiling();
}

NodeProfile SimNode::sample(double now, int64_t processes)
{
	NodeProfile p = static_cast<ProfilingModule *>(profiling_.get())->sample(now);
	if (!overlay_)
		return p;
	const double cores = static_cast<double>(cores_);
	const double external = p.upw * cores;
	const double demand = external + static_cast<double>(processes);
	p.upw = std::min(1.0, demand / cores);
	p.apw = 1.0 - p.upw;
	p.ctxswRate = kBaseCtxsw * cores + kCtxswPerExcessTask * std::max(0.0, demand - cores);

	apwWindow_.push(p.apw);
	p.sigma = apwWindow_.sigma();
	return p;
}

} // namespace malleo::sim
