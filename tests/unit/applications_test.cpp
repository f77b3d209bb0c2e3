// SPDX-License-Identifier: Apache-2.0
// The registry of local MPI processes: register, report, deregister, and what
// a decision module sees of it.
#include "core_harness.h"

using namespace malleo;
using namespace malleo::test;

namespace {

Message request(const char *type, nlohmann::json fields)
{
	Message m = makeMessage(type, "rank", 1);
	m.update(fields);
	return m;
}

} // namespace

TEST_SUITE("applications")
{
	TEST_CASE("processes register, report and leave; iteration times are kept per size")
	{
		TestNetwork net;
		Core &core = *net.add(agentConfig("a")).core;
		CoreOutputs out;
		for (uint32_t rank : {0u, 1u}) {
			Message reply = core.onLocalRequest(
				request("register", {{"app", "heat"}, {"rank", rank}, {"pid", 100 + rank},
						     {"size", 2}, {"malleable", true}, {"units", 2}}),
				net.now(), out);
			CHECK(reply["type"] == "ack");
		}
		const ApplicationInfo &app = core.applications().at("heat");
		CHECK(app.rootAgent == "a");
		CHECK(app.local.size() == 2);
		CHECK(app.local[1].units == 2);

		Message report = request("app_report", {{"app", "heat"}, {"rank", 0},
							{"iteration_times", {1.0, 1.0}}, {"bytes_remote", 4096.0},
							{"cpu_share", 0.5}});
		CHECK(core.onLocalRequest(report, net.now(), out)["type"] == "ack");
		REQUIRE(app.sizes.size() == 1);
		CHECK(app.sizes[0].processes == 2);
		CHECK(app.sizes[0].seconds == doctest::Approx(1.0));
		CHECK(app.local[0].bytesRemote == 4096.0);

		// A new size starts a new sample; the old one is kept for the sweet-spot fit.
		report["size"] = 4;
		report["iteration_times"] = {0.6};
		core.onLocalRequest(report, net.now(), out);
		REQUIRE(app.sizes.size() == 2);
		CHECK(app.sizes[1].processes == 4);

		Message unknown = request("app_report", {{"app", "nosuch"}, {"rank", 0}});
		Message reply = core.onLocalRequest(unknown, net.now(), out);
		CHECK(reply["type"] == "error");
		CHECK(reply["code"] == "unknown_app");

		Message bad = request("register", {{"app", "heat"}, {"rank", -1}, {"pid", 1}, {"size", 1},
						   {"malleable", true}});
		CHECK(core.onLocalRequest(bad, net.now(), out)["code"] == "bad_field");

		for (uint32_t rank : {0u, 1u})
			core.onLocalRequest(request("deregister", {{"app", "heat"}, {"rank", rank}}), net.now(), out);
		CHECK(core.applications().empty());
		bool gone = false;
		for (const nlohmann::json &e : out.events)
			gone |= e["type"] == "app_gone";
		CHECK(gone);
	}
}
