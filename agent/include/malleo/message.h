// SPDX-License-Identifier: Apache-2.0
// The message schema: one envelope and one table of message types for every
// channel (agent ↔ agent, process ↔ agent, CLI ↔ agent). docs/protocol.md
// describes it for people; agent/wire/message_schema.cpp is the table itself.
// Library malleo_wire (agent/wire/): the agent's core, the CLI, the simulator
// and the PCM bridge link it; the PMPI profiler shares only <malleo/wire.h>.
//
// On the wire a message is two ZeroMQ frames: an 8-byte header (magic 0x6d,
// envelope version, flags, reserved, big-endian sequence number) checked before
// any parsing, then the body: MessagePack, or JSON text when the JSON flag is set.
// The body is an object {"v": 1, "type": "...", "from": "...", "id": n, ...}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <malleo/wire.h>

namespace malleo {

using Message = nlohmann::json;

enum class Channel {
	Peer,  // agent ↔ agent, over TCP
	Local, // processes and the CLI ↔ their agent, over ipc
	Remote, // a coordinator on another node ↔ its application's root agent, over TCP: poll and result only
};

// Why a message was refused; `reason` is a short key used for counters
// ("bad_header", "oversized", "too_deep", "undecodable", "bad_envelope", "newer_version",
// "unknown_type", "wrong_channel", "bad_field"), `detail` is one line for logs.
struct Rejection {
	std::string reason;
	std::string detail;
};

struct WireFrames {
	std::vector<uint8_t> header;
	std::string body;
};

WireFrames encodeMessage(const Message &message, uint32_t sequence, bool jsonText = false);

// Decodes and checks the envelope of two frames; the body's fields are checked
// by validateMessage(). Never throws.
std::optional<Rejection> decodeMessage(std::span<const uint8_t> header,
				       std::span<const uint8_t> body,
				       std::size_t maxBytes, Message &out);

// Checks the envelope and the fields of the message's type against the schema.
std::optional<Rejection> validateMessage(const Message &message, Channel channel);

// The message with only the envelope and its type's fields in the schema: what a later hop gets, and what handlers
// see. Unknown fields are allowed (an optional field added later needs no version bump) but never passed on.
// `dropped`, when given, is increased by the number of fields left out. The message must have passed
// validateMessage().
Message knownFields(const Message &message, Channel channel, std::size_t *dropped = nullptr);

// A plausible node profile, field by field (validateMessage refuses one outside these): at most
// kProfileCoresMax cores, kProfilePowerMax units of power (a core of the reference speed is 1), kProfileProcessesMax
// processes; the fractions apw, upw and sigma from 0 to 1; ctxsw up to 1e9 per second.
constexpr double kProfileCoresMax = 16384;
constexpr double kProfilePowerMax = 1e5;
constexpr double kProfileProcessesMax = 1 << 20;
struct ProfileRange {
	const char *key;
	double lowest, highest;
};
const std::vector<ProfileRange> &profileRanges();

// Text from elsewhere (a message, a reply, a log file), quoted in a log line, an event or on a terminal: at most `max`
// bytes of it, printable UTF-8 kept, and every byte of a control character (C0, DEL, C1), of an invisible mark that
// reorders or hides text (bidirectional overrides, zero-width spaces) or of invalid UTF-8 written as \xHH, so that no
// log or terminal ever receives a control sequence from the network. Applying it twice changes nothing more.
std::string printableText(std::string_view text, std::size_t max = 80);

// Builds an envelope of the given type.
Message makeMessage(std::string_view type, std::string_view from, uint64_t id);

// What a reconfiguration command must be to be carried out: `op` split, merge or
// migrate, `count` from 1 to kCommandCountMax, `node`? a non-empty name (not with
// a merge), `weights`? up to kCommandWeightsMax integers from 1 to
// kCommandWeightMax. Checks the fields of a `force` or of a `command` reply
// whose op is not none; returns one line saying what is wrong.
std::optional<std::string> checkCommand(const Message &fields);

// The message types the schema knows, for docs and tests.
std::vector<std::string> messageTypes(Channel channel);

} // namespace malleo
