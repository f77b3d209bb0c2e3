// SPDX-License-Identifier: Apache-2.0
// malleod: the malleo agent. Reads its configuration, loads its three modules
// and runs the daemon. Exit status: 0 after a graceful leave, 1 when it cannot
// run (an address in use, another agent in the run directory), 2 on a bad
// configuration, flag or module.
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <malleo/decision_module.h>
#include <malleo/profiling_module.h>
#include <malleo/protocol_module.h>
#include <malleo/run_dir.h>

#include "config.h"
#include "daemon.h"
#include "module_registry.h"
#include "printable_log.h"

#ifndef MALLEO_MODULEDIR
#define MALLEO_MODULEDIR "/usr/local/lib/malleo/modules"
#endif

using namespace malleo;

namespace {

constexpr int kExitBadInput = 2;

int fail(const std::string &line)
{
	std::cerr << "malleod: " << line << '\n';
	return kExitBadInput;
}

std::string defaultId()
{
	// Started by srun (one task per node of an allocation): Slurm's name for the node, which is what `malleo run`
	// names the ranks' nodes by there (MALLEO_NODE).
	if (const char *slurmNode = std::getenv("SLURMD_NODENAME"); slurmNode && *slurmNode)
		return slurmNode;
	char host[65] = {};
	gethostname(host, sizeof(host) - 1);
	return host[0] ? host : "agent";
}

std::vector<std::string> modulePath(const ModuleSelection &selection)
{
	std::vector<std::string> path = selection.path;
	if (const char *env = std::getenv("MALLEO_MODULE_PATH")) {
		std::stringstream ss(env);
		for (std::string dir; std::getline(ss, dir, ':');)
			if (!dir.empty())
				path.push_back(dir);
	}
	path.push_back(MALLEO_MODULEDIR);
	return path;
}

std::vector<std::string> allBuiltinNames()
{
	std::vector<std::string> names;
	for (ModuleKind k : {ModuleKind::Profiling, ModuleKind::Protocol, ModuleKind::Decision})
		for (const std::string &n : builtinModuleNames(k))
			names.push_back(n);
	return names;
}

// Loads and configures one module; on a refused module falls back to the
// default built-in when the configuration says so.
std::string loadConfigured(ModuleKind kind, std::string &name, const std::string &fallbackName,
			   const AgentConfig &config, ModuleHandle &handle,
			   std::shared_ptr<spdlog::logger> log)
{
	ModuleLoadResult r = loadModule(kind, name, modulePath(config.modules));
	if (!r.error.empty()) {
		if (!config.modules.fallback || name == fallbackName)
			return r.error;
		log->error("{}; falling back to the built-in '{}'", r.error, fallbackName);
		name = fallbackName;
		r = loadModule(kind, name, {});
		if (!r.error.empty())
			return r.error;
	}
	handle = std::move(r.handle);
	if (std::string err = handle.get()->configure(config.moduleTable(name)); !err.empty())
		return fmt::format("{} module '{}': {}", moduleKindName(kind), name, err);
	return {};
}

// malleod's flags; each one set overrides its configuration key.
struct Flags {
	std::string configFile, id, listen, appListen, metricsListen, runDir, logLevel, secretKey, allowedKeys;
	std::vector<std::string> peers;
	bool version = false;
};

void addFlags(CLI::App &app, Flags &f)
{
	app.add_option("--config", f.configFile, "agent configuration (JSON)");
	app.add_option("--id", f.id, "agent id (default: the host name; under srun, the Slurm node name)");
	app.add_option("--listen", f.listen,
		       "peer endpoint to bind, tcp://HOST:PORT or ipc://PATH, e.g. tcp://127.0.0.1:* (default "
		       "tcp://0.0.0.0:5470)");
	app.add_option("--app-listen", f.appListen,
		       "endpoint where coordinators on other nodes poll for their application's commands, or off "
		       "(default: --listen's address, any port)");
	app.add_option("--metrics-listen", f.metricsListen,
		       "HOST:PORT where Prometheus metrics are served over HTTP (GET /metrics), port 0 for any free "
		       "one, or off (default: off)");
	app.add_option("--peer", f.peers,
		       "seed peer endpoint, tcp://HOST:PORT or ipc://PATH, with CURVE written NODE@ENDPOINT "
		       "(repeatable); one that does not answer is logged as a warning");
	app.add_option("--secret-key", f.secretKey,
		       "this node's CURVE secret key file, NODE.key of `malleo keygen` (security.secret_key)");
	app.add_option("--allowed-keys", f.allowedKeys,
		       "directory of the NODE.pub files of the nodes let in (security.allowed_keys)");
	app.add_option("--run-dir", f.runDir, "directory of the local endpoint agent.sock and agent.json");
	app.add_option("--log-level", f.logLevel, "trace, debug, info, warn, error, critical or off");
	app.add_flag("--version", f.version, "print the version and exit");
}

// The configuration file, then the flags over it through the same checks, then the defaults; an error's text or
// nothing.
std::string readConfiguration(const Flags &f, AgentConfig &config)
{
	const std::vector<std::string> builtinNames = allBuiltinNames();
	if (!f.configFile.empty())
		if (std::string err = loadConfigFile(f.configFile, config, builtinNames); !err.empty())
			return err;
	nlohmann::json overrides = nlohmann::json::object();
	for (auto [key, value] : {std::pair{"id", &f.id}, std::pair{"listen", &f.listen},
				  std::pair{"app_listen", &f.appListen}, std::pair{"metrics_listen", &f.metricsListen},
				  std::pair{"run_dir", &f.runDir}, std::pair{"log_level", &f.logLevel}})
		if (!value->empty())
			overrides[key] = *value;
	if (!f.peers.empty())
		overrides["peers"] = f.peers;
	if (!overrides.empty())
		if (std::string err = parseConfig({{"agent", overrides}}, config, builtinNames); !err.empty())
			return "flag: " + err;
	nlohmann::json security = nlohmann::json::object();
	if (!f.secretKey.empty())
		security["secret_key"] = f.secretKey;
	if (!f.allowedKeys.empty())
		security["allowed_keys"] = f.allowedKeys;
	if (!security.empty())
		if (std::string err = parseConfig({{"security", security}}, config, builtinNames); !err.empty())
			return "flag: " + err;
	if (config.core.id.empty())
		config.core.id = defaultId();
	if (config.runDir.empty())
		config.runDir = defaultRunDir();
	if (config.runDir.empty())
		return "no run directory: give --run-dir (or agent.run_dir), or set XDG_RUNTIME_DIR "
		       "(the default as root is /run/malleo)";
	if (spdlog::level::from_str(config.logLevel) == spdlog::level::off && config.logLevel != "off")
		return fmt::format("config key 'agent.log_level': unknown level '{}' (trace, debug, "
				   "info, warn, error, critical, off)",
				   config.logLevel);
	return {};
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"malleod: the malleo agent. One per node; it joins the overlay of its peers, "
		     "profiles the node and answers work-stealing requests.\n"
		     "Every option of the configuration file is documented in docs/configuration.md."};
	Flags flags;
	addFlags(app, flags);
	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		return fail(std::string(e.what()) + " (see --help)");
	}
	if (flags.version) {
		std::cout << "malleod 0.1.0 (module ABI " << MALLEO_MODULE_ABI_MAJOR << '.'
			  << MALLEO_MODULE_ABI_MINOR << ")\n";
		return 0;
	}
	AgentConfig config;
	if (std::string err = readConfiguration(flags, config); !err.empty())
		return fail(err);

	auto log = makePrintableLogger("agent");
	log->set_pattern(fmt::format("%Y-%m-%d %H:%M:%S.%e {} %^%l%$ %v", config.core.id));
	spdlog::cfg::load_env_levels();

	ModuleHandle profiling, protocol, decision;
	if (std::string err = loadConfigured(ModuleKind::Profiling, config.modules.profiling, "host",
					     config, profiling, log);
	    !err.empty())
		return fail(err);
	if (std::string err = loadConfigured(ModuleKind::Protocol, config.modules.protocol, "p2p",
					     config, protocol, log);
	    !err.empty())
		return fail(err);
	if (std::string err = loadConfigured(ModuleKind::Decision, config.modules.decision,
					     "loaddiff", config, decision, log);
	    !err.empty())
		return fail(err);

	// After the modules, whose own errors come first; before anything listens.
	if (std::string err = securityProblem(config); !err.empty())
		return fail(err);

	auto &profilingModule = static_cast<ProfilingModule &>(*profiling.get());
	if (std::string err = profilingModule.start(); !err.empty()) {
		log->error("profiling module '{}': {}", config.modules.profiling, err);
		return 1;
	}
	nlohmann::json moduleNames = {
		{"profiling", {{"name", config.modules.profiling}, {"source", profiling.source()}}},
		{"protocol", {{"name", config.modules.protocol}, {"source", protocol.source()}}},
		{"decision", {{"name", config.modules.decision}, {"source", decision.source()},
			      {"abi_minor", decision.info().abiMinor}}}};

	Daemon daemon(config, profilingModule, static_cast<ProtocolModule &>(*protocol.get()),
		      static_cast<DecisionModule &>(*decision.get()), moduleNames);
	return daemon.run();
}
