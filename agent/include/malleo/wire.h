// SPDX-License-Identifier: Apache-2.0
// The wire format's numbers, defined once for everything that speaks to an agent (docs/protocol.md, "Framing").
//
// This header is deliberately plain: no JSON library, no containers, no allocation, nothing to link. The PMPI
// profiler, which lives inside unmodified MPI programs and writes its few messages by hand into a fixed buffer,
// includes it for the header and the limits; everything else uses the codec and the schema in <malleo/message.h>
// (library malleo_wire, agent/wire/), which include this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace malleo {

// The body's envelope {"v": kSchemaVersion, "type", "from", "id"}; removing or renaming a field bumps it.
constexpr unsigned kSchemaVersion = 1;

// The header frame: magic, envelope version, flags, reserved 0, then the sequence number (u32, big-endian).
constexpr std::uint8_t kWireMagic = 0x6d;
constexpr std::uint8_t kWireVersion = 1;
constexpr std::uint8_t kWireFlagJson = 0x01; // the body is JSON text instead of MessagePack
constexpr std::size_t kWireHeaderSize = 8;

// A body larger than this is refused (agent.max_message_bytes defaults to it); clients size their replies by it.
constexpr std::size_t kDefaultMaxMessageBytes = 64 * 1024;
// Agent ids, application ids, groups and node names.
constexpr std::size_t kMaxIdLength = 64;

// The characters of an id: ASCII letters, digits and - _ . : @ + (a host name, a program's name, a launcher's job id
// such as "prterun-n1-4242@1" or "123.0"). Nothing a terminal interprets, no space, no quote, no '/': `malleo peers`
// and `malleo events` print ids as they are, and a node's key files are named by it. A message naming an id outside
// this set is refused (bad_field); the one rule for every id, in a message or not: an agent's `agent.id`, the nodes
// of its seeds and allowed keys, the key files it reads and `malleo keygen` writes (an id the wire refuses is of no
// use anywhere else).
constexpr bool isIdChar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
	       c == '.' || c == ':' || c == '@' || c == '+';
}

// From 1 to kMaxIdLength characters, each isIdChar.
constexpr bool isValidId(const char *id, std::size_t length)
{
	if (length == 0 || length > kMaxIdLength)
		return false;
	for (std::size_t i = 0; i < length; ++i)
		if (!isIdChar(id[i]))
			return false;
	return true;
}
constexpr bool isValidId(std::string_view id)
{
	return isValidId(id.data(), id.size());
}
// isValidId in words, for a refusal: "'x y' is no id (1 to 64 ...)".
constexpr const char *kIdRule = "1 to 64 of A-Z a-z 0-9 - _ . : @ +";
static_assert(kMaxIdLength == 64, "kIdRule says the length");
// A work request's time to live (agent.ttl, the `ttl` of a wrm, the core's own choice) and the agents it names as
// visited: a request goes at most this many hops.
constexpr unsigned kTtlMax = 64;
constexpr std::size_t kVisitedMax = 64;
// The peers a welcome or a gossip lists.
constexpr std::size_t kPeersMax = 64;
// No message of the schema nests more than a few levels; the limit keeps the
// parsers' recursion far from the stack's end.
constexpr std::size_t kMaxMessageDepth = 32;

// A reconfiguration command, wherever it comes from or goes (malleo force, the agent's `force` and `command`,
// MALLEO_FORCE): its process count, each weight, and how many weights.
constexpr std::int64_t kCommandCountMax = 1000000;
constexpr std::int64_t kCommandWeightMax = 1000000;
constexpr std::size_t kCommandWeightsMax = 4096;
// The applications whose rank 0 an agent hosts, as its hello, welcome and heartbeat name them: how a peer finds
// where to send a reconfiguration request.
constexpr std::size_t kRootsMax = 64;
// The applications a work request says its origin hosts (`hosted`).
constexpr std::size_t kHostedMax = 64;
// A rank, and an application's size (its world, its active processes).
constexpr std::size_t kRankMax = 1u << 24;
// The iterations an application says it has left.
constexpr std::size_t kRemainingMax = std::size_t{1} << 40;
// A process's data units, and an application's on one node.
constexpr std::size_t kUnitsMax = std::size_t{1} << 40;

// An app_report's iteration_times, and the text of a result.
constexpr std::size_t kReportIterationTimesMax = 1024;
constexpr std::size_t kResultTextMax = 512;

// Writes the header frame of a message into `out`.
inline void writeWireHeader(std::uint8_t (&out)[kWireHeaderSize], std::uint32_t sequence, std::uint8_t flags = 0)
{
	out[0] = kWireMagic;
	out[1] = kWireVersion;
	out[2] = flags;
	out[3] = 0;
	out[4] = static_cast<std::uint8_t>(sequence >> 24);
	out[5] = static_cast<std::uint8_t>(sequence >> 16);
	out[6] = static_cast<std::uint8_t>(sequence >> 8);
	out[7] = static_cast<std::uint8_t>(sequence);
}

} // namespace malleo
