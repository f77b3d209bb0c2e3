// SPDX-License-Identifier: Apache-2.0
#include "replay.h"

#include <fstream>

#include <fmt/format.h>

#include "config.h"
#include "simulation.h"

namespace malleo::sim {

std::string replayFile(const std::string &path, const std::vector<std::string> &modulePath,
		       std::ostream &out)
{
	std::ifstream in(path);
	if (!in)
		return fmt::format("replay '{}': cannot be read", path);
	nlohmann::json doc = nlohmann::json::parse(in, nullptr, false, true);
	if (doc.is_discarded() || !doc.is_object())
		return fmt::format("replay '{}': not a JSON object", path);
	if (!doc.contains("agent") || !doc["agent"].is_object() || !doc.contains("steps") ||
	    !doc["steps"].is_array() || !doc.contains("until") || !doc["until"].is_number())
		return fmt::format("replay '{}': needs \"agent\" (a table), \"until\" (seconds) and "
				   "\"steps\" (a list)",
				   path);
	std::vector<std::string> names;
	for (ModuleKind k : {ModuleKind::Profiling, ModuleKind::Protocol, ModuleKind::Decision})
		for (const std::string &n : builtinModuleNames(k))
			names.push_back(n);
	AgentConfig config;
	if (std::string e = parseConfig(doc["agent"], config, names); !e.empty())
		return fmt::format("replay '{}': {}", path, e);
	if (config.modules.profiling != "static")
		return fmt::format("replay '{}': modules.profiling must be \"static\"", path);

	Scenario scenario;
	scenario.nodes = 0;
	scenario.duration = doc["until"].get<double>();
	scenario.agent = doc["agent"];
	scenario.classes.push_back(NodeClass{});
	RunOptions options;
	options.decision = config.modules.decision;
	options.protocol = config.modules.protocol;
	options.modulePath = modulePath;
	Simulation sim;
	if (std::string e = sim.setup(scenario, options); !e.empty())
		return fmt::format("replay '{}': {}", path, e);
	sim.onSend = [&](uint32_t, const std::string &to, const Message &m) {
		out << nlohmann::json{{"t", sim.clock().now()}, {"to", to}, {"message", m}}.dump() << '\n';
	};
	sim.onEvent = [&](uint32_t, const nlohmann::json &e) {
		out << nlohmann::json{{"t", sim.clock().now()}, {"event", e}}.dump() << '\n';
	};
	sim.addReplayNode(config.moduleTable("static"));
	if (!sim.error().empty())
		return fmt::format("replay '{}': {}", path, sim.error());

	const nlohmann::json &steps = doc["steps"];
	for (size_t i = 0; i < steps.size(); ++i) {
		const nlohmann::json &step = steps[i];
		if (!step.is_object() || !step.contains("at") || !step["at"].is_number() ||
		    (step.contains("peer") == step.contains("local")))
			return fmt::format("replay '{}': steps[{}] needs \"at\" and one of \"peer\" and \"local\"",
					   path, i);
		const bool peer = step.contains("peer");
		Message message = peer ? step["peer"] : step["local"];
		sim.clock().at(step["at"].get<double>(), [&sim, &out, peer, message]() {
			if (peer) {
				sim.deliverPeer(0, message);
				return;
			}
			sim.deliverLocal(0, message, [&](const Message &reply) {
				out << nlohmann::json{{"t", sim.clock().now()}, {"reply", reply}}.dump() << '\n';
			});
		});
	}
	sim.clock().run(scenario.duration);
	return {};
}

} // namespace malleo::sim
