// SPDX-License-Identifier: Apache-2.0
// The schema of every message, as one declarative table. Adding an optional
// field needs no version bump; removing or renaming one bumps kSchemaVersion.
// The limits shared with the clients are in <malleo/wire.h>; a command's rules
// beyond the table's are checkCommand() (command_check.cpp).
#include <malleo/message.h>

#include <array>

#include <fmt/format.h>

namespace malleo {

namespace {

enum class Kind { String, Id, UInt, Number, Bool, Object, Array, Profile };

struct Field {
	const char *name;
	Kind kind;
	bool required;
	std::size_t maxItems; // strings: length, arrays: elements, unsigned: value (0: any)
};

struct TypeSpec {
	const char *type;
	Channel channel;
	std::vector<Field> fields;
};

constexpr std::size_t kEndpointMax = 256;
constexpr std::size_t kPeersMax = 64;
constexpr std::size_t kVisitedMax = 64;
constexpr std::size_t kRankMax = 1u << 24;
constexpr std::size_t kPidMax = (1u << 31) - 1;
constexpr std::size_t kUnitsMax = std::size_t{1} << 40;
constexpr std::size_t kWhyMax = 256;

// clang-format off
const std::vector<TypeSpec> &schema()
{
	static const std::vector<TypeSpec> table = {
		// agent ↔ agent
		{"hello",     Channel::Peer, {{"endpoint", Kind::String, true, kEndpointMax},
					  {"agent_version", Kind::String, true, 32},
					  {"group", Kind::String, false, kMaxIdLength},
					  {"profile", Kind::Profile, true, 0},
					  {"roots", Kind::Array, false, kRootsMax}}},
		{"welcome",   Channel::Peer, {{"endpoint", Kind::String, true, kEndpointMax},
					  {"agent_version", Kind::String, true, 32},
					  {"group", Kind::String, false, kMaxIdLength},
					  {"profile", Kind::Profile, true, 0},
					  {"peers", Kind::Array, true, kPeersMax},
					  {"roots", Kind::Array, false, kRootsMax}}},
		{"gossip",    Channel::Peer, {{"peers", Kind::Array, true, kPeersMax}}},
		{"heartbeat", Channel::Peer, {{"endpoint", Kind::String, true, kEndpointMax},
					  {"group", Kind::String, false, kMaxIdLength},
					  {"in_view", Kind::Bool, false, 0},
					  {"profile", Kind::Profile, true, 0},
					  {"roots", Kind::Array, false, kRootsMax},
					  {"draining", Kind::Bool, false, 0}}},
		{"wrm",       Channel::Peer, {{"origin", Kind::Id, true, kMaxIdLength},
					  {"origin_endpoint", Kind::String, true, kEndpointMax},
					  {"origin_profile", Kind::Profile, true, 0},
					  {"wrm_id", Kind::UInt, true, 0},
					  {"ttl", Kind::UInt, true, 64},
					  {"hops", Kind::UInt, true, 1024},
					  {"visited", Kind::Array, true, kVisitedMax}}},
		{"wrm_reply", Channel::Peer, {{"wrm_id", Kind::UInt, true, 0},
					  {"endpoint", Kind::String, true, kEndpointMax},
					  {"profile", Kind::Profile, true, 0},
					  {"hops", Kind::UInt, true, 1024},
					  {"reasons", Kind::Object, true, 0}}},
		// a reconfiguration asked of the agent hosting an application's rank 0, and what became of it
		{"reconf_request", Channel::Peer, {{"app", Kind::Id, true, kMaxIdLength},
					  {"request", Kind::UInt, true, 0},
					  {"op", Kind::String, true, 16},
					  {"count", Kind::UInt, true, kCommandCountMax},
					  {"node", Kind::String, false, kMaxIdLength},
					  {"from_node", Kind::String, false, kMaxIdLength},
					  {"weights", Kind::Array, false, kCommandWeightsMax},
					  {"node_weights", Kind::Object, false, 0},
					  {"trigger", Kind::String, true, 16},
					  {"kind", Kind::String, false, 32},
					  {"why", Kind::String, false, kWhyMax},
					  {"decision", Kind::String, false, 64}}},
		{"reconf_result", Channel::Peer, {{"app", Kind::Id, true, kMaxIdLength},
					  {"request", Kind::UInt, true, 0},
					  {"origin", Kind::Id, true, kMaxIdLength},
					  {"ok", Kind::Bool, true, 0},
					  {"code", Kind::String, false, 64},
					  {"text", Kind::String, false, kResultTextMax},
					  {"command", Kind::UInt, false, 0},
					  {"op", Kind::String, false, 16},
					  {"count", Kind::UInt, false, kCommandCountMax},
					  {"node", Kind::String, false, kMaxIdLength},
					  {"from_node", Kind::String, false, kMaxIdLength},
					  {"trigger", Kind::String, false, 16},
					  {"kind", Kind::String, false, 32},
					  {"why", Kind::String, false, kWhyMax},
					  {"decision", Kind::String, false, 64},
					  {"iteration", Kind::UInt, false, 0},
					  {"before", Kind::UInt, false, kRankMax},
					  {"after", Kind::UInt, false, kRankMax},
					  {"duration", Kind::Number, false, 0},
					  {"bytes", Kind::Number, false, 0}}},
		{"unlink",    Channel::Peer, {}},
		{"leave",     Channel::Peer, {}},
		{"error",     Channel::Peer, {{"code", Kind::String, true, 64},
					  {"text", Kind::String, true, 512}}},
		// CLI and processes ↔ local agent
		{"status",    Channel::Local, {}},
		{"peers",     Channel::Local, {}},
		{"events",    Channel::Local, {}},
		{"apps",      Channel::Local, {}},
		{"force",     Channel::Local, {{"app", Kind::Id, true, kMaxIdLength},
					   {"op", Kind::String, true, 16},
					   {"count", Kind::UInt, true, kCommandCountMax},
					   {"node", Kind::String, false, kMaxIdLength},
					   {"from_node", Kind::String, false, kMaxIdLength},
					   {"weights", Kind::Array, false, kCommandWeightsMax},
					   {"node_weights", Kind::Object, false, 0}}},
		{"drain",     Channel::Local, {{"deadline", Kind::Number, false, 0}}},
		// MPI processes ↔ local agent
		{"register",  Channel::Local, {{"app", Kind::Id, true, kMaxIdLength},
					   {"rank", Kind::UInt, true, kRankMax},
					   {"pid", Kind::UInt, true, kPidMax},
					   {"size", Kind::UInt, true, kRankMax},
					   {"malleable", Kind::Bool, true, 0},
					   {"units", Kind::UInt, false, kUnitsMax}}},
		{"app_report", Channel::Local, {{"app", Kind::Id, true, kMaxIdLength},
					    {"rank", Kind::UInt, true, kRankMax},
					    {"size", Kind::UInt, false, kRankMax},
					    {"units", Kind::UInt, false, kUnitsMax},
					    {"iteration_times", Kind::Array, false, kReportIterationTimesMax},
					    {"bytes_local", Kind::Number, false, 0},
					    {"bytes_remote", Kind::Number, false, 0},
					    {"cpu_share", Kind::Number, false, 0},
					    {"active", Kind::Bool, false, 0}}},
		{"deregister", Channel::Local, {{"app", Kind::Id, true, kMaxIdLength},
					    {"rank", Kind::UInt, true, kRankMax}}},
		{"poll",      Channel::Local, {{"app", Kind::Id, true, kMaxIdLength},
					   {"iteration", Kind::UInt, true, 0},
					   {"size", Kind::UInt, false, kRankMax}}},
		{"result",    Channel::Local, {{"app", Kind::Id, true, kMaxIdLength},
					   {"command", Kind::UInt, true, 0},
					   {"ok", Kind::Bool, true, 0},
					   {"text", Kind::String, false, kResultTextMax},
					   {"iteration", Kind::UInt, false, 0},
					   {"before", Kind::UInt, false, kRankMax},
					   {"after", Kind::UInt, false, kRankMax},
					   {"duration", Kind::Number, false, 0},
					   {"bytes", Kind::Number, false, 0}}},
		{"error",     Channel::Local, {{"code", Kind::String, true, 64},
					   {"text", Kind::String, true, 512}}},
	};
	return table;
}
// clang-format on

const TypeSpec *findSpec(std::string_view type, Channel channel, bool *otherChannel)
{
	*otherChannel = false;
	for (const TypeSpec &spec : schema()) {
		if (type != spec.type)
			continue;
		if (spec.channel == channel)
			return &spec;
		*otherChannel = true;
	}
	return nullptr;
}

// MessagePack decodes every non-negative integer as unsigned; messages built in
// memory may hold them as signed.
bool isUnsigned(const nlohmann::json &value)
{
	return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

std::optional<std::string> checkProfile(const nlohmann::json &value)
{
	if (!value.is_object())
		return "is not an object";
	for (const char *key : {"pw", "apw", "upw", "sigma", "ctxsw", "cores", "procs"}) {
		auto it = value.find(key);
		if (it == value.end())
			return fmt::format("lacks '{}'", key);
		if (!it->is_number())
			return fmt::format("'{}' is not a number", key);
	}
	return std::nullopt;
}

std::optional<std::string> checkField(const Field &field, const nlohmann::json &value)
{
	switch (field.kind) {
	case Kind::String:
	case Kind::Id:
		if (!value.is_string())
			return "is not a string";
		if (value.get_ref<const std::string &>().size() > field.maxItems)
			return fmt::format("is longer than {} characters", field.maxItems);
		if (field.kind == Kind::Id && value.get_ref<const std::string &>().empty())
			return "is empty";
		return std::nullopt;
	case Kind::UInt:
		if (!isUnsigned(value))
			return "is not an unsigned integer";
		if (field.maxItems && value.get<uint64_t>() > field.maxItems)
			return fmt::format("exceeds {}", field.maxItems);
		return std::nullopt;
	case Kind::Number:
		if (!value.is_number())
			return "is not a number";
		return std::nullopt;
	case Kind::Bool:
		if (!value.is_boolean())
			return "is not a boolean";
		return std::nullopt;
	case Kind::Object:
		if (!value.is_object())
			return "is not an object";
		return std::nullopt;
	case Kind::Array:
		if (!value.is_array())
			return "is not an array";
		if (value.size() > field.maxItems)
			return fmt::format("has more than {} elements", field.maxItems);
		return std::nullopt;
	case Kind::Profile:
		return checkProfile(value);
	}
	return "has an unknown kind";
}

} // namespace

std::optional<Rejection> validateMessage(const Message &message, Channel channel)
{
	if (!message.is_object())
		return Rejection{"bad_envelope", "body is not an object"};
	auto v = message.find("v");
	auto type = message.find("type");
	auto from = message.find("from");
	auto id = message.find("id");
	if (v == message.end() || !isUnsigned(*v))
		return Rejection{"bad_envelope", "'v' is missing or not an unsigned integer"};
	if (v->get<uint64_t>() > kSchemaVersion)
		return Rejection{"newer_version",
				 fmt::format("schema version {} is newer than ours ({})",
					     v->get<uint64_t>(), kSchemaVersion)};
	if (type == message.end() || !type->is_string())
		return Rejection{"bad_envelope", "'type' is missing or not a string"};
	if (from == message.end() || !from->is_string() ||
	    from->get_ref<const std::string &>().size() > kMaxIdLength)
		return Rejection{"bad_envelope", "'from' is missing, not a string or too long"};
	if (id == message.end() || !isUnsigned(*id))
		return Rejection{"bad_envelope", "'id' is missing or not an unsigned integer"};

	const std::string &typeName = type->get_ref<const std::string &>();
	bool otherChannel = false;
	const TypeSpec *spec = findSpec(typeName, channel, &otherChannel);
	if (!spec) {
		if (otherChannel)
			return Rejection{"wrong_channel",
					 fmt::format("type '{}' does not belong on this channel", typeName)};
		return Rejection{"unknown_type",
				 fmt::format("unknown type '{:.64}'", typeName)};
	}

	for (const Field &field : spec->fields) {
		auto it = message.find(field.name);
		if (it == message.end()) {
			if (field.required)
				return Rejection{"bad_field",
						 fmt::format("{}: '{}' is missing", typeName, field.name)};
			continue;
		}
		if (auto problem = checkField(field, *it))
			return Rejection{"bad_field",
					 fmt::format("{}: '{}' {}", typeName, field.name, *problem)};
	}
	return std::nullopt;
}

std::vector<std::string> messageTypes(Channel channel)
{
	std::vector<std::string> types;
	for (const TypeSpec &spec : schema())
		if (spec.channel == channel)
			types.emplace_back(spec.type);
	return types;
}

} // namespace malleo
