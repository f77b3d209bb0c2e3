// SPDX-License-Identifier: Apache-2.0
// The codec and the schema: what is refused, and why.
#include <cmath>
#include <limits>

#include <doctest/doctest.h>

#include <malleo/command.h>
#include <malleo/message.h>
#include <malleo/profile.h>

using namespace malleo;

namespace {

std::optional<Rejection> decode(const WireFrames &f, Message &out, std::size_t max = kDefaultMaxMessageBytes)
{
	auto body = std::span(reinterpret_cast<const uint8_t *>(f.body.data()), f.body.size());
	return decodeMessage(f.header, body, max, out);
}

Message heartbeat()
{
	Message m = makeMessage("heartbeat", "n1", 1);
	m["endpoint"] = "tcp://127.0.0.1:5000";
	m["profile"] = toJson(NodeProfile{});
	return m;
}

} // namespace

TEST_SUITE("message")
{
	TEST_CASE("a message survives the codec, in MessagePack and in JSON text")
	{
		for (bool json : {false, true}) {
			Message out;
			WireFrames f = encodeMessage(heartbeat(), 0x01020304, json);
			REQUIRE(f.header.size() == kWireHeaderSize);
			CHECK(f.header[0] == kWireMagic);
			CHECK(f.header[4] == 1);
			CHECK(f.header[7] == 4);
			CHECK_FALSE(decode(f, out));
			CHECK(out == heartbeat());
			CHECK_FALSE(validateMessage(out, Channel::Peer));
		}
	}

	TEST_CASE("the header is checked before the body")
	{
		Message out;
		WireFrames f = encodeMessage(heartbeat(), 1);
		f.header.pop_back();
		CHECK(decode(f, out)->reason == "bad_header");
		f = encodeMessage(heartbeat(), 1);
		f.header[1] = 9;
		CHECK(decode(f, out)->reason == "newer_version");
		f = encodeMessage(heartbeat(), 1);
		CHECK(decode(f, out, f.body.size() - 1)->reason == "oversized");
		f.body = std::string("\xc1\xc1\xc1", 3); // 0xc1 is never used in MessagePack
		CHECK(decode(f, out)->reason == "undecodable");
	}

	TEST_CASE("nesting past the limit is refused before parsing, in MessagePack and in JSON text")
	{
		auto nested = [](std::size_t depth) {
			Message m = heartbeat();
			Message extra = 1;
			for (std::size_t i = 0; i < depth; ++i)
				extra = Message::array({extra});
			m["extra"] = extra;
			return m;
		};
		for (bool json : {false, true}) {
			Message out;
			// The envelope is one level, so kMaxMessageDepth - 1 levels fit in a field.
			CHECK_FALSE(decode(encodeMessage(nested(kMaxMessageDepth - 1), 1, json), out));
			CHECK(decode(encodeMessage(nested(kMaxMessageDepth), 1, json), out)->reason == "too_deep");
			// Bytes that look like containers inside strings are not nesting.
			Message m = heartbeat();
			// (U+2011 is e2 80 91 in UTF-8, U+0710 dc 90: a fixarray and an array 16 outside a string.)
			m["extra"] = std::string(5000, '[') + "\u2011\u0710\u2011";
			CHECK_FALSE(decode(encodeMessage(m, 1, json), out));
			CHECK(out == m);
		}
		// Every MessagePack container form counts: array 16 and map 32 at depth 40.
		std::string body;
		for (int i = 0; i < 40; ++i)
			body += i % 2 ? std::string("\xdc\x00\x01", 3) : std::string("\xdf\x00\x00\x00\x01\xa1k", 7);
		body += '\xc0';
		WireFrames f = encodeMessage(heartbeat(), 1);
		f.body = body;
		Message out;
		CHECK(decode(f, out)->reason == "too_deep");
		// Strings must be text: MessagePack would carry any bytes.
		f.body = "\x81\xa1k\xa2\xc3\x28";
		CHECK(decode(f, out)->detail == "a string is not valid UTF-8");
		// A truncated container is left to the parser, which refuses it.
		f.body = std::string("\xdd\xff\xff\xff\xff\x90", 6);
		CHECK(decode(f, out)->reason == "undecodable");
	}

	TEST_CASE("envelope and fields are validated against the schema")
	{
		Message m = heartbeat();
		m.erase("from");
		CHECK(validateMessage(m, Channel::Peer)->reason == "bad_envelope");
		m = heartbeat();
		m["id"] = -1;
		CHECK(validateMessage(m, Channel::Peer)->reason == "bad_envelope");
		m = heartbeat();
		m["v"] = kSchemaVersion + 1;
		CHECK(validateMessage(m, Channel::Peer)->reason == "newer_version");
		m = heartbeat();
		m["type"] = "status";
		CHECK(validateMessage(m, Channel::Peer)->reason == "wrong_channel");
		m["type"] = "nonsense";
		CHECK(validateMessage(m, Channel::Peer)->reason == "unknown_type");
		m = heartbeat();
		m["endpoint"] = std::string(300, 'x');
		CHECK(validateMessage(m, Channel::Peer)->reason == "bad_field");
		m = heartbeat();
		m["profile"].erase("apw");
		auto r = validateMessage(m, Channel::Peer);
		REQUIRE(r);
		CHECK(r->reason == "bad_field");
		CHECK(r->detail.find("apw") != std::string::npos);
		m = heartbeat();
		m["unknown_field_is_ignored"] = true;
		CHECK_FALSE(validateMessage(m, Channel::Peer));
		CHECK_FALSE(validateMessage(Message::array(), Channel::Local) == std::nullopt);
	}

	TEST_CASE("profiles outside their ranges are refused")
	{
		NodeProfile p;
		nlohmann::json j = toJson(p);
		j["apw"] = 1.5;
		CHECK(fromJson(j, p).find("apw") != std::string::npos);
		j = toJson(p);
		j["pw"] = -1;
		CHECK(fromJson(j, p).find("pw") != std::string::npos);
		j = toJson(p);
		CHECK(fromJson(j, p) == "");
	}

	TEST_CASE("a result's refusal is a kind and a count, on the local and the peer channel")
	{
		auto result = [](nlohmann::json refusal) {
			Message m = makeMessage("result", "", 1);
			m.update({{"app", "heat"}, {"command", 3}, {"ok", false}, {"refusal", std::move(refusal)}});
			return m;
		};
		CHECK_FALSE(validateMessage(result({{"kind", "pool_exhausted"}, {"most", 1}}), Channel::Local));
		CHECK_FALSE(validateMessage(result({{"kind", "other"}}), Channel::Local));
		CHECK_FALSE(validateMessage(result({{"kind", "a_newer_kind"}, {"most", 0}}), Channel::Local));
		for (const nlohmann::json &bad : {nlohmann::json("pool_exhausted"), nlohmann::json::object(),
						  nlohmann::json{{"kind", ""}}, nlohmann::json{{"kind", "no spaces"}},
						  nlohmann::json{{"kind", std::string(33, 'k')}},
						  nlohmann::json{{"kind", "pool_exhausted"}, {"most", -1}},
						  nlohmann::json{{"kind", "pool_exhausted"}, {"most", 1.5}},
						  nlohmann::json{{"kind", "pool_exhausted"}, {"most", 2000000}}}) {
			auto rejection = validateMessage(result(bad), Channel::Local);
			REQUIRE(rejection);
			CHECK(rejection->reason == "bad_field");
			CHECK(rejection->detail.find("'refusal'") != std::string::npos);
		}
		Message told = makeMessage("reconf_result", "n1", 1);
		told.update({{"app", "heat"}, {"request", 2}, {"origin", "n2"}, {"ok", false}, {"code", "failed"},
			     {"refusal", {{"kind", "merge_ranks"}, {"most", 0}}}});
		CHECK_FALSE(validateMessage(told, Channel::Peer));
		told["refusal"] = {{"most", 0}};
		CHECK(validateMessage(told, Channel::Peer));
	}

	TEST_CASE("a work request's `hosted` gives each application's units and load, at most kHostedMax of them")
	{
		auto wrm = [](nlohmann::json hosted) {
			Message m = makeMessage("wrm", "n2", 1);
			m.update({{"origin", "n2"}, {"origin_endpoint", "tcp://127.0.0.1:5000"},
				  {"origin_profile", toJson(NodeProfile{})}, {"wrm_id", 1}, {"ttl", 3}, {"hops", 1},
				  {"visited", {"n2"}}, {"hosted", std::move(hosted)}});
			return m;
		};
		const auto share = [](nlohmann::json units, nlohmann::json load) {
			return nlohmann::json{{"units", std::move(units)}, {"load", std::move(load)}};
		};
		CHECK_FALSE(validateMessage(wrm({{"heat2d-1", share(4, 1.5)}, {"astro-2", share(0, 0)}}), Channel::Peer));
		CHECK_FALSE(validateMessage(wrm(nlohmann::json::object()), Channel::Peer));
		nlohmann::json full = nlohmann::json::object();
		for (std::size_t k = 0; k <= kHostedMax; ++k)
			full["app" + std::to_string(k)] = share(1, 0.5);
		for (const nlohmann::json &bad :
		     {nlohmann::json::array({1}), nlohmann::json{{"heat", 4}}, nlohmann::json{{"heat", share(-1, 0)}},
		      nlohmann::json{{"heat", share(1.5, 0)}}, nlohmann::json{{"heat", share("4", 0)}},
		      nlohmann::json{{"heat", share(uint64_t{1} << 41, 0)}}, nlohmann::json{{"heat", share(1, -0.5)}},
		      nlohmann::json{{"heat", share(1, 1e9)}}, nlohmann::json{{"heat", share(1, "1")}},
		      nlohmann::json{{"heat", {{"units", 1}}}}, nlohmann::json{{"", share(1, 0)}},
		      nlohmann::json{{"a b", share(1, 0)}}, full}) {
			auto rejection = validateMessage(wrm(bad), Channel::Peer);
			REQUIRE(rejection);
			CHECK(rejection->reason == "bad_field");
			CHECK(rejection->detail.find("'hosted'") != std::string::npos);
		}
	}

	TEST_CASE("a heartbeat's `root_apps` gives each rooted application's size and figures, at most kRootsMax of them")
	{
		auto said = [](nlohmann::json figures) {
			Message m = heartbeat();
			m["root_apps"] = std::move(figures);
			return m;
		};
		const nlohmann::json full_figures = {{"size", 2}, {"iteration_seconds", 0.5}, {"remaining", 900}, {"cost", 0.25}};
		CHECK_FALSE(validateMessage(said({{"heat2d-1", full_figures}, {"astro-2", {{"size", 0}}}}), Channel::Peer));
		CHECK_FALSE(validateMessage(said({{"heat", {{"size", kRankMax}, {"remaining", kRemainingMax}}}}), Channel::Peer));
		CHECK_FALSE(validateMessage(said(nlohmann::json::object()), Channel::Peer));
		nlohmann::json full = nlohmann::json::object();
		for (std::size_t k = 0; k <= kRootsMax; ++k)
			full["app" + std::to_string(k)] = {{"size", 1}};
		const auto with = [&](const char *key, nlohmann::json value) {
			nlohmann::json f = full_figures;
			f[key] = std::move(value);
			return nlohmann::json{{"heat", f}};
		};
		const double inf = std::numeric_limits<double>::infinity();
		for (const nlohmann::json &bad :
		     {nlohmann::json::array({1}), nlohmann::json{{"heat", 2}}, nlohmann::json{{"heat", {{"cost", 1.0}}}},
		      with("size", -1), with("size", 1.5), with("size", "2"), with("size", kRankMax + 1),
		      with("remaining", -3), with("remaining", kRemainingMax + 1), with("iteration_seconds", -0.5),
		      with("iteration_seconds", std::nan("")), with("iteration_seconds", inf), with("cost", inf),
		      with("cost", "1"), nlohmann::json{{"", {{"size", 1}}}}, nlohmann::json{{"a b", {{"size", 1}}}}, full}) {
			auto rejection = validateMessage(said(bad), Channel::Peer);
			REQUIRE(rejection);
			CHECK(rejection->reason == "bad_field");
			CHECK(rejection->detail.find("'root_apps'") != std::string::npos);
		}
	}

	TEST_CASE("a command's rules are one function, with the wire format's limits")
	{
		auto problem = [](nlohmann::json fields) { return checkCommand(fields).value_or(""); };
		CHECK(problem({{"op", "split"}, {"count", 2}}) == "");
		CHECK(problem({{"op", "migrate"}, {"count", kCommandCountMax}, {"node", std::string(kMaxIdLength, 'n')},
			       {"weights", std::vector<int64_t>(kCommandWeightsMax, kCommandWeightMax)}}) == "");
		// As MessagePack decodes them: non-negative integers are unsigned.
		CHECK(problem({{"op", "merge"}, {"count", uint64_t{1}}, {"weights", {uint64_t{1}, uint64_t{3}}}}) == "");

		CHECK(problem({{"op", "grow"}, {"count", 1}}).find("split, merge or migrate") != std::string::npos);
		CHECK(problem({{"count", 1}}) != "");
		CHECK(problem({{"op", "split"}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 0}}) == "'count' must be at least 1");
		CHECK(problem({{"op", "split"}, {"count", uint64_t{0}}}) == "'count' must be at least 1");
		CHECK(problem({{"op", "split"}, {"count", -1}}) == "'count' must be at least 1");
		CHECK(problem({{"op", "split"}, {"count", 1.5}}) != "");
		CHECK(problem({{"op", "split"}, {"count", kCommandCountMax + 1}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"node", ""}}) == "'node' is empty");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"node", std::string(kMaxIdLength + 1, 'n')}}) != "");
		CHECK(problem({{"op", "merge"}, {"count", 1}, {"node", "n2"}}) == "a merge takes no node");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"weights", {1, 0}}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"weights", {uint64_t{0}}}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"weights", {kCommandWeightMax + 1}}}) != "");
		// node_weights (issue 27): integers per node id, and not with weights.
		CHECK(problem({{"op", "split"}, {"count", 1}, {"node_weights", {{"n1", 1000}, {"n2", 2000}}}}) == "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"node_weights", {{"n1", 0}}}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"node_weights", {{"n1", 1.5}}}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"node_weights", nlohmann::json::array()}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"node_weights", {{"n1", 1}}}, {"weights", {1, 1}}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"weights", {1.5}}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1}, {"weights", "1,2"}}) != "");
		CHECK(problem({{"op", "split"}, {"count", 1},
			       {"weights", std::vector<int64_t>(kCommandWeightsMax + 1, 1)}}) != "");
		// The schema bounds what it can say with the same numbers.
		Message force = makeMessage("force", "cli", 1);
		force.update({{"app", "heat"}, {"op", "split"}, {"count", kCommandCountMax + 1}});
		CHECK(validateMessage(force, Channel::Local)->reason == "bad_field");
		force["count"] = kCommandCountMax;
		CHECK_FALSE(validateMessage(force, Channel::Local));
	}
	TEST_CASE("a command's fields are written and read in one place, through checkCommand")
	{
		Command c{Operation::Migrate, 2, "n1", "n2", {1, 3}};
		const Message fields = commandFields(c);
		CHECK(fields == Message{{"op", "migrate"}, {"count", 2}, {"node", "n1"}, {"from_node", "n2"},
					{"weights", {1, 3}}});
		Command back;
		REQUIRE_FALSE(readCommand(fields, back));
		CHECK(back.op == c.op);
		CHECK(back.count == c.count);
		CHECK(back.node == c.node);
		CHECK(back.from == c.from);
		CHECK(back.weights == c.weights);
		CHECK(back.nodeWeights.empty());
		Command perNode{Operation::Split, 1};
		CHECK(commandFields(perNode) == Message{{"op", "split"}, {"count", 1}});
		perNode.nodeWeights = {{"n1", 5}};
		REQUIRE_FALSE(readCommand(commandFields(perNode), back));
		CHECK(back.nodeWeights == perNode.nodeWeights);
		// Refused as checkCommand refuses, with its line, and `out` left as it was.
		for (const Message &bad : {Message{{"op", "split"}, {"count", 1}, {"from_node", "n2"}},
					   Message{{"op", "none"}, {"count", 1}}, Message{{"op", "merge"}, {"count", 0}},
					   Message{{"op", "split"}, {"count", 1}, {"weights", {0}}}, Message::array()}) {
			CAPTURE(bad.dump());
			Command kept{Operation::Merge, 7};
			const std::optional<std::string> problem = readCommand(bad, kept);
			REQUIRE(problem);
			CHECK(*problem == checkCommand(bad).value());
			CHECK(kept.op == Operation::Merge);
			CHECK(kept.count == 7);
		}
		CHECK(describeCommand(c) == "migrate 2 n2 -> n1");
		CHECK(describeCommand({Operation::Merge, 1, "", "n1"}) == "merge 1 on n1");
		CHECK(describeCommand({Operation::Split, 3}) == "split 3");
		Operation op = Operation::None;
		CHECK_FALSE(operationFromName("none", op));
		CHECK(operationFromName("merge", op));
		CHECK(op == Operation::Merge);
	}

	TEST_CASE("a `command` reply is a command only when it passes checkCommand and has an id")
	{
		Command c;
		uint64_t id = 0;
		std::string problem;
		CHECK_FALSE(commandFromReply({{"type", "command"}, {"op", "none"}}, c, id, problem));
		CHECK(problem.empty());
		CHECK_FALSE(commandFromReply({{"type", "command"}, {"op", "split"}, {"count", 1}, {"from_node", "a"},
					      {"command", uint64_t{3}}},
					     c, id, problem));
		CHECK(problem == "a command that cannot be carried out (a split takes no from_node (its processes are new))");
		CHECK_FALSE(commandFromReply({{"type", "command"}, {"op", "split"}, {"count", 1}}, c, id, problem));
		CHECK(problem == "a command without a valid id");
		CHECK(c.op == Operation::None);
		// As MessagePack decodes it: a command id is unsigned.
		REQUIRE(commandFromReply(
			{{"type", "command"}, {"op", "split"}, {"count", 2}, {"node", "b"}, {"command", uint64_t{3}}}, c, id,
			problem));
		CHECK(c.op == Operation::Split);
		CHECK(c.count == 2);
		CHECK(c.node == "b");
		CHECK(id == 3);
	}

	TEST_CASE("ids are from the id character set, everywhere a message names one")
	{
		const nlohmann::json profile = {{"pw", 1.0}, {"apw", 0.5}, {"upw", 0.5}, {"sigma", 0.0},
						{"ctxsw", 0.0}, {"cores", 1}, {"procs", 0}};
		Message hello = makeMessage("hello", "n1.example-a_b:1@2+3", 1);
		hello.update({{"endpoint", "tcp://n1:5470"}, {"agent_version", "1"}, {"profile", profile}});
		CHECK_FALSE(validateMessage(hello, Channel::Peer));
		for (const char *bad : {"", "a b", "a\x1b[2J", "a\"b", "a/b", "\xc3\xa9"}) {
			Message m = hello;
			m["from"] = bad;
			CHECK(validateMessage(m, Channel::Peer)->reason == "bad_envelope");
		}
		Message grouped = hello;
		grouped["group"] = "g\x1b[31m";
		CHECK(validateMessage(grouped, Channel::Peer)->reason == "bad_field");
		grouped["group"] = "";
		CHECK_FALSE(validateMessage(grouped, Channel::Peer));
		Message rooted = hello;
		rooted["roots"] = {"heat-1", "x\x07"};
		CHECK(validateMessage(rooted, Channel::Peer)->reason == "bad_field");
		Message reg = makeMessage("register", "", 1);
		reg.update({{"app", "heat 1"}, {"rank", 0}, {"pid", 1}, {"size", 1}, {"malleable", true}});
		CHECK(validateMessage(reg, Channel::Local)->reason == "bad_field");
		reg["app"] = "heat-1";
		CHECK_FALSE(validateMessage(reg, Channel::Local));
		Message big = hello;
		big["profile"]["pw"] = 1e9;
		CHECK(validateMessage(big, Channel::Peer)->reason == "bad_field");
		big["profile"]["pw"] = 1.0;
		big["profile"]["cores"] = 1e6;
		CHECK(validateMessage(big, Channel::Peer)->reason == "bad_field");
	}

	TEST_CASE("only the schema's fields are kept, nested unknown ones included")
	{
		Message m = makeMessage("leave", "n1", 7);
		m["extra"] = {{"nested", {1, 2, 3}}};
		m["more"] = 1;
		REQUIRE_FALSE(validateMessage(m, Channel::Peer));
		std::size_t dropped = 0;
		const Message known = knownFields(m, Channel::Peer, &dropped);
		CHECK(dropped == 2);
		CHECK(known == makeMessage("leave", "n1", 7));
	}

	TEST_CASE("text from elsewhere is shown inert: controls, C1, invisible marks and invalid UTF-8 escaped")
	{
		CHECK(printableText("tcp://n1:5470 v1.2 é ✓ \\x") == "tcp://n1:5470 v1.2 é ✓ \\x");
		CHECK(printableText("a\x1b[2Jb\x07\n\x7f") == "a\\x1b[2Jb\\x07\\x0a\\x7f");
		CHECK(printableText("\xc2\x9b" "31m") == "\\xc2\\x9b31m");        // U+009B, a CSI by itself
		CHECK(printableText("x\xe2\x80\xaey") == "x\\xe2\\x80\\xaey");    // U+202E, right-to-left override
		CHECK(printableText("\xff\xc3(\xed\xa0\x80") == "\\xff\\xc3(\\xed\\xa0\\x80"); // stray, cut, surrogate
		CHECK(printableText("ab\xc3\xa9", 3) == "ab\\xc3");                // cut by max: the half is escaped
		const std::string once = printableText("\x1b]0;t\x07\xc2\x9b\xe2\x80\xae\xff");
		CHECK(printableText(once, 1000) == once);
		for (char c : once)
			CHECK((c >= 0x20 && c < 0x7f));
	}
}
