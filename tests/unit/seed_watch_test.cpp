// SPDX-License-Identifier: Apache-2.0
// The daemon's watch over unanswered seeds (agent/daemon/seed_watch.h), fed the hellos the core
// sends.
#include <doctest/doctest.h>

#include "seed_watch.h"

using namespace malleo;

TEST_SUITE("seed_watch")
{
	TEST_CASE(
	    "an unanswered seed is said at its first unanswered hello, then at doubling intervals")
	{
		SeedWatch watch({"tcp://node2:5470"});
		std::vector<double> warned;
		for (int i = 0; i <= 100; ++i) {
			const double t = i * 1.0; // join_retry 1 s
			const std::string line = watch.helloSent("tcp://node2:5470", t);
			if (!line.empty()) {
				CHECK(line.find("seed tcp://node2:5470 has not answered") == 0);
				warned.push_back(t);
			}
		}
		// The second hello shows the first unanswered; then after 2, 4, 8, 16, 32 and 64 s.
		CHECK(warned == std::vector<double>{1, 3, 7, 15, 31, 63});
		CHECK(watch.helloSent("tcp://node2:5470", 101).empty());
	}

	TEST_CASE("the interval stops growing at kLongestInterval")
	{
		SeedWatch watch({"ipc:///x"});
		double last = -1, gap = 0;
		for (int i = 0; i <= 20000; ++i) {
			if (!watch.helloSent("ipc:///x", i).empty()) {
				if (last >= 0)
					gap = i - last;
				last = i;
			}
		}
		CHECK(gap == SeedWatch::kLongestInterval);
	}

	TEST_CASE("hellos to other endpoints are no seed's; a peer starts every seed over")
	{
		SeedWatch watch({"tcp://a:1"});
		CHECK(watch.helloSent("tcp://candidate:2", 0).empty());
		CHECK(watch.helloSent("tcp://candidate:2", 1).empty());
		CHECK(watch.helloSent("tcp://a:1", 0).empty());
		CHECK(!watch.helloSent("tcp://a:1", 1).empty());
		watch.peerUp();
		// Alone again later: the first hello is the start again, the next one the first
		// warning.
		CHECK(watch.helloSent("tcp://a:1", 50).empty());
		const std::string line = watch.helloSent("tcp://a:1", 51);
		CHECK(line ==
		      "seed tcp://a:1 has not answered: 1 hello unanswered in 1.0 s; still asking");
	}
}
