// SPDX-License-Identifier: Apache-2.0
// The caps on a listening socket's connections (agent/daemon/connection_caps.h) and the descriptor budget they come
// from (agent/daemon/descriptor_budget.h), built from the daemon's sources.
#include <doctest/doctest.h>

#include "connection_caps.h"
#include "descriptor_budget.h"

using namespace malleo;

TEST_SUITE("connection_caps")
{
	TEST_CASE("past the per-address cap the new connection goes when the others finished their handshake")
	{
		ConnectionCaps caps(100, 2, 5.0);
		CHECK(caps.accepted(10, "10.0.0.2", 0.0).empty());
		CHECK(caps.accepted(11, "10.0.0.2", 0.0).empty());
		// Both older than the handshake window: established, kept.
		CHECK(caps.accepted(12, "10.0.0.2", 6.0) == std::vector<int>{12});
		// Another address is not affected.
		CHECK(caps.accepted(13, "10.0.0.3", 6.0).empty());
	}

	TEST_CASE("the oldest connection still in its handshake goes first")
	{
		ConnectionCaps caps(100, 2, 5.0);
		CHECK(caps.accepted(10, "10.0.0.2", 0.0).empty());
		CHECK(caps.accepted(11, "10.0.0.2", 1.0).empty());
		CHECK(caps.accepted(12, "10.0.0.2", 2.0) == std::vector<int>{10});
		// 10 is closing: it no longer counts, its end is what frees its number.
		CHECK(caps.accepted(13, "10.0.0.2", 3.0) == std::vector<int>{11});
		caps.ended(10);
		caps.ended(11);
		CHECK(caps.size() == 2);
	}

	TEST_CASE("the total cap closes across addresses, handshaking ones first")
	{
		ConnectionCaps caps(3, 3, 5.0);
		CHECK(caps.accepted(10, "10.0.0.1", 0.0).empty()); // a peer, established at t=6
		CHECK(caps.accepted(11, "10.0.0.2", 5.5).empty());
		CHECK(caps.accepted(12, "10.0.0.3", 5.8).empty());
		CHECK(caps.accepted(13, "10.0.0.4", 6.0) == std::vector<int>{11});
		CHECK(caps.addressOf(10) == "10.0.0.1");
	}

	TEST_CASE("a descriptor number reused before its end was reported replaces the old connection")
	{
		ConnectionCaps caps(2, 2, 5.0);
		CHECK(caps.accepted(10, "10.0.0.2", 0.0).empty());
		CHECK(caps.accepted(10, "10.0.0.3", 1.0).empty());
		CHECK(caps.size() == 1);
		CHECK(caps.addressOf(10) == "10.0.0.3");
	}
}

TEST_SUITE("descriptor_budget")
{
	TEST_CASE("at systemd's default of 1,024 every part fits under the limit")
	{
		const DescriptorBudget b = descriptorBudget(1024, 3);
		CHECK(b.outgoingSockets == 120);
		CHECK(b.local >= kReservedLocalMin);
		CHECK(b.perAddress == kPerAddressMin);
		CHECK(b.perListener >= b.perAddress);
		CHECK(kReservedFixed + 2 * b.outgoingSockets + b.local + 3 * b.perListener <= 1024);
	}

	TEST_CASE("at a high limit the outgoing sockets stop at 512 and the listeners get the rest")
	{
		const DescriptorBudget b = descriptorBudget(65536, 2);
		CHECK(b.outgoingSockets == 512);
		CHECK(b.perListener > 10000);
		CHECK(b.perAddress == b.perListener / 8);
		CHECK(kReservedFixed + 2 * b.outgoingSockets + b.local + 2 * b.perListener <= 65536);
	}

	TEST_CASE("a limit below the reserve leaves nothing to share, without wrapping around")
	{
		const DescriptorBudget b = descriptorBudget(32, 1);
		CHECK(b.outgoingSockets == 0);
		CHECK(b.perListener == 0);
		CHECK(b.perAddress == 0);
	}
}
