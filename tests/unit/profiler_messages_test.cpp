// SPDX-License-Identifier: Apache-2.0
// The PMPI profiler writes its messages by hand (pmpi_profiler/src/agent_msgpack.h says why); these are what keep
// that writer and the agent's codec and schema one wire format: what the profiler writes, the agent decodes and
// accepts.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <malleo/message.h>

#include "agent_msgpack.h"

using namespace malleo;
using namespace malleo::pmpi;

namespace {

struct Written {
	std::vector<uint8_t> header;
	std::vector<uint8_t> body;
	bool overflow = false;
};

template<typename Write>
Written write(uint32_t sequence, Write &&fill, size_t capacity = 16384)
{
	Written out;
	out.body.resize(capacity);
	MsgpackWriter w{out.body.data(), out.body.size()};
	fill(w);
	out.body.resize(w.size);
	out.overflow = w.overflow;
	uint8_t header[kWireHeaderSize];
	writeWireHeader(header, sequence);
	out.header.assign(header, header + kWireHeaderSize);
	return out;
}

// Decoded by the agent's codec and validated against its schema on the local channel, as the agent does.
Message accepted(const Written &written)
{
	Message m;
	REQUIRE_FALSE(written.overflow);
	std::optional<Rejection> r = decodeMessage(written.header, written.body, kDefaultMaxMessageBytes, m);
	REQUIRE_MESSAGE(!r, (r ? r->reason + ": " + r->detail : ""));
	r = validateMessage(m, Channel::Local);
	CHECK_MESSAGE(!r, (r ? r->reason + ": " + r->detail : ""));
	return m;
}

const std::string kApp = "heat2d-4711";
const MessageOrigin kOrigin{kApp.c_str(), kApp.size(), 3};

} // namespace

TEST_SUITE("profiler_messages")
{
	TEST_CASE("the header is the one docs/protocol.md gives")
	{
		// Magic 0x6d, envelope version 1, flags 0 (MessagePack), reserved 0, the sequence big-endian.
		const std::vector<uint8_t> documented = {0x6d, 0x01, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04};
		const Written w = write(0x01020304, [](MsgpackWriter &m) { writeDeregister(m, 1, kOrigin); });
		CHECK(w.header == documented);
		CHECK(encodeMessage(makeMessage("deregister", "x", 1), 0x01020304).header == documented);
	}

	TEST_CASE("register")
	{
		const Message m = accepted(write(1, [](MsgpackWriter &w) { writeRegister(w, 1, kOrigin, 4242, 8); }));
		Message expected = makeMessage("register", "malleo-pmpi", 1);
		expected.update({{"app", kApp}, {"rank", 3}, {"pid", 4242}, {"size", 8}, {"malleable", false},
				 {"units", 1}});
		CHECK(m == expected);
	}

	TEST_CASE("app_report, with and without its optional fields")
	{
		const Message bare = accepted(write(2, [](MsgpackWriter &w) {
			writeAppReport(w, 2, kOrigin, AppReport{.cpuShare = 0.5, .active = false});
		}));
		CHECK(bare["type"] == "app_report");
		CHECK(bare["cpu_share"] == 0.5);
		CHECK(bare["active"] == false);
		CHECK_FALSE(bare.contains("iteration_times"));
		CHECK_FALSE(bare.contains("bytes_local"));

		// As many iteration times as the agent takes, and large counters: every MessagePack form the writer has.
		std::vector<double> times(kReportIterationTimesMax);
		for (size_t i = 0; i < times.size(); ++i)
			times[i] = 0.001 * double(i + 1);
		const MessageOrigin far{kApp.c_str(), kApp.size(), (1u << 24) - 1};
		AppReport full{.cpuShare = 1.25, .active = true, .iterationTimes = times.data(),
			       .iterationTimeCount = times.size(), .withBytes = true, .bytesLocal = 1e9,
			       .bytesRemote = 0.0};
		const Message m = accepted(write(70000, [&](MsgpackWriter &w) { writeAppReport(w, 70000, far, full); }));
		CHECK(m["id"] == 70000);
		CHECK(m["rank"] == (1u << 24) - 1);
		CHECK(m["iteration_times"].get<std::vector<double>>() == times);
		CHECK(m["bytes_local"] == 1e9);
		CHECK(m["bytes_remote"] == 0.0);

		// One more than the schema's limit is refused: the profiler's bound and the agent's are one number.
		times.push_back(1.0);
		full.iterationTimes = times.data();
		full.iterationTimeCount = times.size();
		const Written over = write(3, [&](MsgpackWriter &w) { writeAppReport(w, 3, kOrigin, full); });
		Message decoded;
		REQUIRE_FALSE(decodeMessage(over.header, over.body, kDefaultMaxMessageBytes, decoded));
		CHECK(validateMessage(decoded, Channel::Local)->reason == "bad_field");
	}

	TEST_CASE("deregister, and an application id of the longest length")
	{
		const std::string longest(kMaxIdLength, 'a');
		const MessageOrigin origin{longest.c_str(), longest.size(), 0};
		const Message m = accepted(write(4, [&](MsgpackWriter &w) { writeDeregister(w, 4, origin); }));
		CHECK(m["app"] == longest);
		CHECK(m["from"] == "malleo-pmpi");
		CHECK(m["v"] == kSchemaVersion);
	}

	TEST_CASE("a body that does not fit is marked, not cut")
	{
		const Written w = write(5, [](MsgpackWriter &m) { writeRegister(m, 5, kOrigin, 1, 1); }, 16);
		CHECK(w.overflow);
		CHECK(w.body.size() <= 16);
	}
}
