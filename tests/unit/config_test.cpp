// SPDX-License-Identifier: Apache-2.0
// The configuration: defaults, strict keys, one line naming the bad key.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "config.h"
#include "endpoints.h"

using namespace malleo;

namespace {

std::string parse(const char *text, AgentConfig &config)
{
	return parseConfig(nlohmann::json::parse(text), config, {"host", "static", "p2p"});
}

} // namespace

TEST_SUITE("config")
{
	TEST_CASE("values are read and defaults kept")
	{
		AgentConfig c;
		CHECK(parse(R"({"agent": {"id": "n1", "peers": ["tcp://a:1"]},
				"membership": {"failure_timeout": 3.5},
				"modules": {"protocol": "p2p", "on_error": "fallback"},
				"p2p": {"view_size": 4}})", c) == "");
		CHECK(c.core.id == "n1");
		CHECK(c.core.seeds == std::vector<std::string>{"tcp://a:1"});
		CHECK(c.core.failureTimeout == 3.5);
		CHECK(c.core.heartbeatInterval == 0.5);
		CHECK(c.modules.fallback);
		CHECK(c.moduleTable("p2p")["view_size"] == 4);
		CHECK(c.moduleTable("host").empty());
	}

	TEST_CASE("every problem is one line naming the key")
	{
		AgentConfig c;
		CHECK(parse(R"({"agent": {"idd": "x"}})", c) == "config key 'agent.idd': unknown key");
		CHECK(parse(R"({"membership": {"failure_timeout": "soon"}})", c) ==
		      "config key 'membership.failure_timeout': expected a number, got \"soon\"");
		CHECK(parse(R"({"work_stealing": {"ttl": 100}})", c) ==
		      "config key 'work_stealing.ttl': 100 is outside [0, 64]");
		CHECK(parse(R"({"modules": {"on_error": "shrug"}})", c).find("modules.on_error") !=
		      std::string::npos);
		CHECK(parse(R"({"gossipp": {}})", c).find("'gossipp': unknown section") != std::string::npos);
		CHECK(parse(R"({"agent": {"id": "has space"}})", c).find("agent.id") != std::string::npos);
		CHECK(parse(R"({"agent": {"peers": "tcp://a:1"}})", c).find("agent.peers") != std::string::npos);
		CHECK(parse(R"([1, 2])", c) == "config: the document must be a JSON object");
		CHECK(parse(R"({"agent": {"app_listen": "ipc:///tmp/x"}})", c) ==
		      "config key 'agent.app_listen': expected a tcp:// endpoint or \"off\", got \"ipc:///tmp/x\"");
	}

	TEST_CASE("an id is what the wire takes (isValidId): agent.id, a seed's node, an allowed key's node")
	{
		// A launcher's or a host's name with : @ + is an id in every message, so it is one here too.
		AgentConfig c;
		CHECK(parse(R"({"agent": {"id": "n1.x-y_z:2@3+4", "peers": ["a@b@tcp://a:1", "tcp://b:2"]}})", c) == "");
		CHECK(c.core.id == "n1.x-y_z:2@3+4");
		CHECK(c.seedNodes == std::map<std::string, std::string>{{"tcp://a:1", "a@b"}});
		CHECK(c.core.seeds == std::vector<std::string>{"tcp://a:1", "tcp://b:2"});
		const std::string rule = std::string("(") + kIdRule + ")";
		for (const char *bad : {"has space", "a/b", "\u00e9t\u00e9",
					"0123456789012345678901234567890123456789012345678901234567890123X"}) {
			CAPTURE(bad);
			AgentConfig refused;
			const std::string problem =
				parse(fmt::format(R"({{"agent": {{"id": "{}"}}}})", bad).c_str(), refused);
			CHECK(problem.rfind("config key 'agent.id': '", 0) == 0);
			CHECK(problem.find(rule) != std::string::npos);
		}
		AgentConfig seed;
		CHECK(parse(R"({"agent": {"peers": ["a b@tcp://a:1"]}})", seed).find(rule) != std::string::npos);
	}

	TEST_CASE("the metrics address: off by default, HOST:PORT, a malformed one refused in one line")
	{
		AgentConfig c;
		CHECK(c.metricsListen.empty());
		for (const char *good : {"127.0.0.1:9470", "0.0.0.0:0", "[::1]:9470", "node-1.example:65535", "off"}) {
			INFO(good);
			CHECK(parse(fmt::format(R"({{"agent": {{"metrics_listen": "{}"}}}})", good).c_str(), c) == "");
			CHECK(c.metricsListen == good);
		}
		for (const char *bad : {"127.0.0.1", ":9470", "127.0.0.1:65536", "127.0.0.1:94x", "a b:1", "::1:9470",
					"http://127.0.0.1:9470"}) {
			INFO(bad);
			const std::string error =
				parse(fmt::format(R"({{"agent": {{"metrics_listen": "{}"}}}})", bad).c_str(), c);
			CHECK(error.starts_with("config key 'agent.metrics_listen': "));
			CHECK(error.find('\n') == std::string::npos);
		}
		HostPort address;
		CHECK(parseHostPort("[::1]:9470", address) == "");
		CHECK(address.host == "::1");
		CHECK(address.port == 9470);
	}

	TEST_CASE("the remote application endpoint: listen's address by default, one given, or none")
	{
		AgentConfig c;
		CHECK(appListenEndpoint(c) == "tcp://0.0.0.0:*");
		CHECK(parse(R"({"agent": {"listen": "tcp://127.0.0.1:*"}})", c) == "");
		CHECK(appListenEndpoint(c) == "tcp://127.0.0.1:*");
		CHECK(parse(R"({"agent": {"app_listen": "tcp://10.0.0.2:5471"}})", c) == "");
		CHECK(appListenEndpoint(c) == "tcp://10.0.0.2:5471");
		CHECK(parse(R"({"agent": {"app_listen": "off"}})", c) == "");
		CHECK(appListenEndpoint(c) == "");
	}

	TEST_CASE("endpoints are checked when read: a slip is one line naming the key, never a bind elsewhere")
	{
		// Each on a fresh configuration: a refused value stays in the one it was read into.
		const auto fresh = [](const char *text) {
			AgentConfig c;
			return parse(text, c);
		};
		CHECK(fresh(R"({"agent": {"listen": "tcp://127.0.0.1:5470x"}})") ==
		      "config key 'agent.listen': 'tcp://127.0.0.1:5470x': the port '5470x' is not a number from 0 to "
		      "65535 or *");
		CHECK(fresh(R"({"agent": {"peers": ["tcp://a:1", "foo"]}})") ==
		      "config key 'agent.peers': 'foo' is not an endpoint: expected tcp://HOST:PORT or ipc://PATH");
		CHECK(fresh(R"({"agent": {"peers": ["node2:5470"]}})") ==
		      "config key 'agent.peers': 'node2:5470' is not an endpoint: expected tcp://HOST:PORT or ipc://PATH "
		      "(tcp://node2:5470?)");
		CHECK(fresh(R"({"agent": {"advertise": "tcp://*:5470"}})").starts_with("config key 'agent.advertise':"));
		CHECK(fresh(R"({"agent": {"app_listen": "tcp://0.0.0.0:x"}})").starts_with(
			"config key 'agent.app_listen':"));
		CHECK(fresh(R"({"agent": {"listen": "tcp://0.0.0.0:*", "advertise": "tcp://node1.example:5470",
				"peers": ["tcp://10.0.0.2:5470", "tcp://[fe80::1%eth0]:5470", "ipc:///run/x.sock"]}})") == "");
	}

	TEST_CASE("what an endpoint may be, to bind and to connect")
	{
		for (const char *good : {"tcp://127.0.0.1:*", "tcp://*:5470", "tcp://0.0.0.0:0", "tcp://eth0:5470",
					 "tcp://[::]:5470", "ipc:///tmp/a.sock"})
			CHECK_MESSAGE(endpointProblem(good, EndpointUse::Bind) == "", good);
		for (const char *good : {"tcp://node-2.example.org:5470", "tcp://10.0.0.2:65535", "tcp://[::1]:1",
					 "ipc://relative/a.sock"})
			CHECK_MESSAGE(endpointProblem(good, EndpointUse::Connect) == "", good);
		for (const char *bad : {"tcp://127.0.0.1", "tcp://:5470", "tcp://a b:1", "tcp://[::1]", "tcp://[zz]:1",
					"tcp://a:-1", "tcp://a:65536", "tcp://a:5470x", "tcp://", "ipc://", "inproc://x", "x",
					"tcp://src;dst:5470"})
			CHECK_MESSAGE(endpointProblem(bad, EndpointUse::Bind) != "", bad);
		// Only a bind takes any address or any port.
		CHECK(endpointProblem("tcp://*:5470", EndpointUse::Connect) != "");
		CHECK(endpointProblem("tcp://a:*", EndpointUse::Connect) != "");
		CHECK(endpointProblem("tcp://a:0", EndpointUse::Connect) != "");
		CHECK(endpointProblem("ipc:///" + std::string(107, 'p'), EndpointUse::Bind) != "");
	}

	TEST_CASE("security: a key file and a directory, or a table of keys, or plain; seeds naming their node")
	{
		const std::string key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
		AgentConfig c;
		CHECK(parse(R"({"agent": {"peers": ["n1@tcp://a:1", "tcp://b:2"]},
				"security": {"secret_key": "/k/n2.key", "allowed_keys": "/k"}})", c) == "");
		CHECK(c.security.secretKeyFile == "/k/n2.key");
		CHECK(c.security.allowedKeysDir == "/k");
		CHECK(c.security.curve());
		CHECK(!c.security.plain);
		CHECK(c.core.seeds == std::vector<std::string>{"tcp://a:1", "tcp://b:2"});
		CHECK(c.seedNodes == std::map<std::string, std::string>{{"tcp://a:1", "n1"}});

		AgentConfig listed;
		CHECK(parse(fmt::format(R"({{"security": {{"secret_key": "/k/n2.key", "allowed_keys": {{"n1": "{}"}}}}}})",
					key).c_str(),
			    listed) == "");
		CHECK(listed.security.allowedKeys == std::map<std::string, std::string>{{"n1", key}});
		CHECK(listed.security.allowedKeysDir.empty());

		AgentConfig plain;
		CHECK(parse(R"({"security": {"plain": true}})", plain) == "");
		CHECK(plain.security.plain);
		CHECK(!plain.security.curve());
		CHECK(securityProblem(plain) == "");

		AgentConfig d;
		CHECK(!d.security.plain);
		CHECK(!d.security.curve());

		const auto refused = [](const std::string &text, const char *said) {
			AgentConfig bad;
			const std::string e = parseConfig(nlohmann::json::parse(text), bad, {"host", "static", "p2p"});
			CHECK_MESSAGE(e.find(said) != std::string::npos, text, " -> ", e);
		};
		refused(R"({"security": {"plain": "yes"}})", "security.plain");
		refused(R"({"security": {"secret": "/k"}})", "security.secret");
		refused(R"({"security": {"allowed_keys": 3}})", "security.allowed_keys");
		refused(R"({"security": {"allowed_keys": {"n1": "short"}}})", "security.allowed_keys.n1");
		refused(R"({"security": {"allowed_keys": {"bad id": ")" + key + R"("}}})", "security.allowed_keys");
		refused(R"({"security": {"allowed_keys": {"n1": ")" + key + R"(", "n2": ")" + key + R"("}}})",
			"the same public key");
		refused(R"({"security": {"plain": true, "secret_key": "/k/n1.key"}})", "choose one");
		refused(R"({"security": []})", "security");
		refused(R"({"agent": {"peers": ["bad id@tcp://a:1"]}})", "agent.peers");
	}

	TEST_CASE("security: TCP needs keys or security.plain; UNIX sockets alone need neither")
	{
		AgentConfig tcp;
		tcp.core.id = "n1";
		const std::string problem = securityProblem(tcp);
		CHECK(problem.find("malleo keygen --dir DIR n1") != std::string::npos);
		CHECK(problem.find("security.plain") != std::string::npos);

		AgentConfig ipc;
		ipc.listen = "ipc:///tmp/x.sock";
		CHECK(securityProblem(ipc) == "");

		AgentConfig noAllowed;
		noAllowed.security.secretKeyFile = "/nonexistent/n1.key";
		CHECK(securityProblem(noAllowed).find("security.allowed_keys") != std::string::npos);
		noAllowed.security.allowedKeysDir = "/nonexistent";
		CHECK(securityProblem(noAllowed).find("'/nonexistent/n1.key'") != std::string::npos);
	}
}
