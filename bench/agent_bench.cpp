// SPDX-License-Identifier: Apache-2.0
// Benchmarks of one real malleod on loopback:
//   - WRM one-hop round trip: this program plays the idle origin, the agent is
//     loaded (static profile) and answers; median and p99 over many requests;
//   - sustained message rate: WRMs sent in windows of 256 outstanding, replies counted;
//   - the agent's resident memory and CPU while idle among two peers.
//
//	meson compile -C build && ./build/bench/agent_bench [--rounds 5] [--requests 2000]
//
// Prints a table and, with --json, one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <malleo/message.h>
#include <malleo/profile.h>

extern char **environ;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct AgentProcess {
	pid_t pid = -1;
	std::string endpoint;
	std::string dir;

	AgentProcess(const std::string &malleod, const std::string &name, const nlohmann::json &config,
		     const std::vector<std::string> &seeds = {})
	{
		dir = fs::temp_directory_path() / fmt::format("malleo-bench-{}-{}", getpid(), name);
		fs::create_directories(dir);
		nlohmann::json c = config;
		c["agent"]["id"] = name;
		c["agent"]["listen"] = "tcp://127.0.0.1:*";
		c["agent"]["run_dir"] = dir;
		c["agent"]["peers"] = seeds;
		c["agent"]["log_level"] = "warn";
		// The benchmark speaks to the agent as a peer of its own making, with no key: plain TCP (CURVE's cost is not
		// in these figures).
		c["security"]["plain"] = true;
		std::ofstream(dir + "/config.json") << c.dump();
		std::string configPath = dir + "/config.json";
		std::vector<char *> argv = {const_cast<char *>(malleod.c_str()),
					    const_cast<char *>("--config"), configPath.data(), nullptr};
		if (posix_spawn(&pid, malleod.c_str(), nullptr, nullptr, argv.data(), environ) != 0)
			throw std::runtime_error("cannot start " + malleod);
		for (int i = 0; i < 500; ++i) {
			if (waitpid(pid, nullptr, WNOHANG) == pid) {
				pid = -1;
				throw std::runtime_error("agent " + name + " exited at start; see its message above");
			}
			std::ifstream f(dir + "/agent.json");
			nlohmann::json info = nlohmann::json::parse(f, nullptr, false);
			if (!info.is_discarded() && info.contains("endpoint")) {
				endpoint = info["endpoint"];
				return;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
		throw std::runtime_error("agent " + name + " did not start");
	}

	~AgentProcess()
	{
		if (pid > 0) {
			kill(pid, SIGTERM);
			waitpid(pid, nullptr, 0);
		}
		std::error_code ec;
		fs::remove_all(dir, ec);
	}

	double cpuSeconds() const
	{
		std::ifstream f(fmt::format("/proc/{}/stat", pid));
		std::string line;
		std::getline(f, line);
		// Fields after the command name (which may hold spaces): utime is the 14th field.
		std::istringstream in(line.substr(line.rfind(')') + 2));
		std::string field;
		unsigned long utime = 0, stime = 0;
		for (int i = 3; i <= 15 && in >> field; ++i) {
			if (i == 14)
				utime = std::stoul(field);
			if (i == 15)
				stime = std::stoul(field);
		}
		return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
	}

	double rssMiB() const
	{
		std::ifstream f(fmt::format("/proc/{}/status", pid));
		for (std::string line; std::getline(f, line);)
			if (line.rfind("VmRSS:", 0) == 0)
				return std::stod(line.substr(6)) / 1024.0;
		return 0;
	}
};

// The idle origin: a ROUTER for replies and a DEALER to the agent.
class Origin
{
public:
	Origin(zmq::context_t &ctx, const std::string &agent, const std::string &bind)
		: inbox_(ctx, zmq::socket_type::router), out_(ctx, zmq::socket_type::dealer)
	{
		inbox_.bind(bind);
		endpoint_ = inbox_.get(zmq::sockopt::last_endpoint);
		out_.set(zmq::sockopt::routing_id, "bench");
		out_.set(zmq::sockopt::sndhwm, 0);
		out_.connect(agent);
	}

	void send(uint64_t id)
	{
		malleo::NodeProfile idle;
		malleo::Message m = malleo::makeMessage("wrm", "bench", id);
		m["origin"] = "bench";
		m["origin_endpoint"] = endpoint_;
		m["origin_profile"] = malleo::toJson(idle);
		m["wrm_id"] = id;
		m["ttl"] = 4;
		m["hops"] = 1;
		m["visited"] = {"bench"};
		malleo::WireFrames f = malleo::encodeMessage(m, static_cast<uint32_t>(id));
		std::array<zmq::const_buffer, 2> parts = {zmq::buffer(f.header), zmq::buffer(f.body)};
		if (!zmq::send_multipart(out_, parts))
			throw std::runtime_error("cannot send to the agent");
	}

	// Waits for one reply; returns its wrm_id or 0 on timeout.
	uint64_t receive(int timeoutMs = 2000)
	{
		zmq::pollitem_t item = {inbox_.handle(), 0, ZMQ_POLLIN, 0};
		if (zmq::poll(&item, 1, std::chrono::milliseconds(timeoutMs)) == 0)
			return 0;
		std::vector<zmq::message_t> frames;
		if (!zmq::recv_multipart(inbox_, std::back_inserter(frames)))
			return 0;
		malleo::Message m;
		auto bytes = [](const zmq::message_t &x) {
			return std::span(static_cast<const uint8_t *>(x.data()), x.size());
		};
		if (frames.size() != 3 || malleo::decodeMessage(bytes(frames[1]), bytes(frames[2]), 1 << 20, m))
			return 0;
		return m.value("wrm_id", uint64_t{0});
	}

private:
	zmq::socket_t inbox_, out_;
	std::string endpoint_;
};

double percentile(std::vector<double> v, double p)
{
	std::sort(v.begin(), v.end());
	return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

std::string defaultMalleod(const char *argv0)
{
	fs::path self = fs::canonical(fs::path(argv0)).parent_path();
	return (self.parent_path() / "agent" / "daemon" / "malleod").string();
}

// Each round's WRM round trips (median and 99th percentile, µs) and message rate (answered per second).
struct WrmFigures {
	std::vector<double> medians, p99s, rates;
};

WrmFigures measureWrms(Origin &origin, uint64_t &next, int rounds, int requests)
{
	WrmFigures w;
	for (int r = 0; r < rounds; ++r) {
		std::vector<double> rtt;
		for (int i = 0; i < requests; ++i) {
			uint64_t id = next++;
			auto t0 = Clock::now();
			origin.send(id);
			while (true) {
				uint64_t got = origin.receive();
				if (got == id || got == 0)
					break;
			}
			rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
		}
		w.medians.push_back(percentile(rtt, 0.5));
		w.p99s.push_back(percentile(rtt, 0.99));

		// Rate: keep 256 requests in flight.
		const int window = 256;
		int sent = 0, received = 0;
		auto t0 = Clock::now();
		while (received < requests) {
			while (sent < requests && sent - received < window) {
				origin.send(next++);
				++sent;
			}
			if (origin.receive() == 0)
				break;
			++received;
		}
		w.rates.push_back(received / std::chrono::duration<double>(Clock::now() - t0).count());
	}
	return w;
}

// Idle: an agent with host profiling among two peers, heartbeating, watched `idleSeconds`: its CPU use (a share of
// one core) and the largest resident memory of the four agents (MiB).
std::pair<double, double> measureIdle(const std::string &malleod, double idleSeconds, const AgentProcess &loaded)
{
	nlohmann::json idleConfig = {{"modules", {{"profiling", "host"}}}, {"host", {{"pw", 1.0}}},
				     {"work_stealing", {{"enabled", false}}}};
	AgentProcess a(malleod, "idle-a", idleConfig);
	AgentProcess b(malleod, "idle-b", idleConfig, {a.endpoint});
	AgentProcess c(malleod, "idle-c", idleConfig, {a.endpoint});
	std::this_thread::sleep_for(std::chrono::seconds(2));
	double cpu0 = a.cpuSeconds();
	auto t0 = Clock::now();
	std::this_thread::sleep_for(std::chrono::duration<double>(idleSeconds));
	double idleCpu = (a.cpuSeconds() - cpu0) / std::chrono::duration<double>(Clock::now() - t0).count();
	double rss = std::max({a.rssMiB(), b.rssMiB(), c.rssMiB(), loaded.rssMiB()});
	return {idleCpu, rss};
}

} // namespace

int run(const std::string &malleod, const std::string &agentEndpoint, const std::string &bind, int rounds,
	int requests, double idleSeconds, bool json);

int main(int argc, char **argv)
{
	CLI::App app{"Benchmarks of one malleod on loopback: WRM round trip, message rate, idle cost."};
	int rounds = 5, requests = 2000;
	double idleSeconds = 10;
	std::string malleod = defaultMalleod(argv[0]);
	std::string agent, bind = "tcp://127.0.0.1:*";
	bool json = false;
	app.add_option("--rounds", rounds, "repetitions of each measurement (medians are reported)");
	app.add_option("--requests", requests, "WRMs per round");
	app.add_option("--idle-seconds", idleSeconds, "how long the idle agent is watched");
	app.add_option("--malleod", malleod, "the agent binary");
	app.add_option("--agent", agent,
		       "measure the round trip to this running agent (a loaded one, as this benchmark starts) instead "
		       "of starting one, and skip the idle measures (bench/hosts.py: across network namespaces)");
	app.add_option("--bind", bind, "where the benchmark's inbox listens (default tcp://127.0.0.1:*)");
	app.add_flag("--json", json, "print one JSON object");
	CLI11_PARSE(app, argc, argv);
	try {
		return run(malleod, agent, bind, rounds, requests, idleSeconds, json);
	} catch (const std::exception &e) {
		std::cerr << "agent_bench: " << e.what() << '\n';
		return 1;
	}
}

int run(const std::string &malleod, const std::string &agentEndpoint, const std::string &bind, int rounds,
	int requests, double idleSeconds, bool json)
{

	nlohmann::json loaded = {{"modules", {{"profiling", "static"}, {"decision", "loaddiff"}}},
				 {"static", {{"apw", 0.05}, {"upw", 0.95}}},
				 {"work_stealing", {{"enabled", false}}}};
	std::optional<AgentProcess> agent;
	if (agentEndpoint.empty())
		agent.emplace(malleod, "loaded", loaded);
	zmq::context_t ctx;
	Origin origin(ctx, agent ? agent->endpoint : agentEndpoint, bind);
	uint64_t next = 1;

	// Warm up: the first request opens the agent's connection back to us.
	for (int i = 0; i < 200; ++i) {
		origin.send(next++);
		origin.receive();
	}

	const WrmFigures w = measureWrms(origin, next, rounds, requests);
	auto median = [](std::vector<double> v) { return percentile(std::move(v), 0.5); };
	if (!agent) {
		nlohmann::json result = {{"wrm_rtt_median_us", median(w.medians)}, {"wrm_rtt_p99_us", median(w.p99s)},
					 {"wrm_rate_per_s", median(w.rates)}, {"rounds", rounds}, {"requests", requests}};
		if (json)
			std::cout << result.dump(2) << '\n';
		else
			fmt::print("WRM one-hop round trip to {}   median {:.1f} µs   p99 {:.1f} µs   rate {:.0f} / s\n",
				   agentEndpoint, median(w.medians), median(w.p99s), median(w.rates));
		return 0;
	}

	const auto [idleCpu, rss] = measureIdle(malleod, idleSeconds, *agent);

	nlohmann::json result = {{"wrm_rtt_median_us", median(w.medians)},
				 {"wrm_rtt_p99_us", median(w.p99s)},
				 {"wrm_rate_per_s", median(w.rates)},
				 {"idle_cpu_percent", idleCpu * 100},
				 {"max_rss_mib", rss},
				 {"rounds", rounds},
				 {"requests", requests}};
	if (json) {
		std::cout << result.dump(2) << '\n';
		return 0;
	}
	fmt::print("WRM one-hop round trip   median {:8.1f} µs   p99 {:8.1f} µs   (median of {} rounds of {})\n",
		   median(w.medians), median(w.p99s), rounds, requests);
	fmt::print("message rate             {:8.0f} WRM answered per second (256 in flight)\n", median(w.rates));
	fmt::print("idle agent CPU           {:8.3f} % of one core over {:.0f} s\n", idleCpu * 100, idleSeconds);
	fmt::print("resident memory          {:8.1f} MiB (largest of 4 agents)\n", rss);
	return 0;
}
