// SPDX-License-Identifier: Apache-2.0
// The schema of every message, as one declarative table. Adding an optional
// field needs no version bump; removing or renaming one bumps kSchemaVersion.
// The limits shared with the clients are in <malleo/wire.h>; a command's rules
// beyond the table's are checkCommand() (command_check.cpp).
#include <malleo/message.h>

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace malleo {

namespace {

// Id: an id of <malleo/wire.h>'s character set; GroupId: the same or empty; Ids: an array of ids; Refusal: why the
// bridge refused a command, {"kind": id, "most"?: count} (checkRefusal); Hosted: {app id: {"units": count, "load":
// cores}}, at most maxItems applications (checkHosted); RootApps: {app id: {"size": count, "iteration_seconds"?: s,
// "remaining"?: count, "cost"?: s}}, at most maxItems applications (checkRootApps).
enum class Kind { String, Id, GroupId, Ids, UInt, Number, Bool, Object, Array, Profile, Refusal, Hosted, RootApps };

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
// A work request's and its reply's hop count: a request goes kTtlMax hops at most, a little more is only odd.
constexpr std::size_t kHopsMax = 1024;
constexpr std::size_t kPidMax = (1u << 31) - 1;
constexpr std::size_t kWhyMax = 256;

// clang-format off
const std::vector<TypeSpec> &schema()
{
	static const std::vector<TypeSpec> table = {
		// agent ↔ agent
		{"hello",     Channel::Peer, {{"endpoint", Kind::String, true, kEndpointMax},
					  {"agent_version", Kind::String, true, 32},
					  {"group", Kind::GroupId, false, kMaxIdLength},
					  {"profile", Kind::Profile, true, 0},
					  {"roots", Kind::Ids, false, kRootsMax}}},
		{"welcome",   Channel::Peer, {{"endpoint", Kind::String, true, kEndpointMax},
					  {"agent_version", Kind::String, true, 32},
					  {"group", Kind::GroupId, false, kMaxIdLength},
					  {"profile", Kind::Profile, true, 0},
					  {"peers", Kind::Array, true, kPeersMax},
					  {"roots", Kind::Ids, false, kRootsMax}}},
		{"gossip",    Channel::Peer, {{"peers", Kind::Array, true, kPeersMax}}},
		{"heartbeat", Channel::Peer, {{"endpoint", Kind::String, true, kEndpointMax},
					  {"group", Kind::GroupId, false, kMaxIdLength},
					  {"in_view", Kind::Bool, false, 0},
					  {"profile", Kind::Profile, true, 0},
					  {"roots", Kind::Ids, false, kRootsMax},
					  {"root_apps", Kind::RootApps, false, kRootsMax},
					  {"draining", Kind::Bool, false, 0}}},
		{"wrm",       Channel::Peer, {{"origin", Kind::Id, true, kMaxIdLength},
					  {"origin_endpoint", Kind::String, true, kEndpointMax},
					  {"origin_profile", Kind::Profile, true, 0},
					  {"wrm_id", Kind::UInt, true, 0},
					  {"ttl", Kind::UInt, true, kTtlMax},
					  {"hops", Kind::UInt, true, kHopsMax},
					  {"visited", Kind::Ids, true, kVisitedMax},
					  {"hosted", Kind::Hosted, false, kHostedMax}}},
		{"wrm_reply", Channel::Peer, {{"wrm_id", Kind::UInt, true, 0},
					  {"endpoint", Kind::String, true, kEndpointMax},
					  {"profile", Kind::Profile, true, 0},
					  {"hops", Kind::UInt, true, kHopsMax},
					  {"reasons", Kind::Object, true, 0}}},
		// a reconfiguration asked of the agent hosting an application's rank 0, and what became of it
		{"reconf_request", Channel::Peer, {{"app", Kind::Id, true, kMaxIdLength},
					  {"request", Kind::UInt, true, 0},
					  {"op", Kind::String, true, 16},
					  {"count", Kind::UInt, true, kCommandCountMax},
					  {"node", Kind::Id, false, kMaxIdLength},
					  {"from_node", Kind::Id, false, kMaxIdLength},
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
					  {"node", Kind::Id, false, kMaxIdLength},
					  {"from_node", Kind::Id, false, kMaxIdLength},
					  {"trigger", Kind::String, false, 16},
					  {"kind", Kind::String, false, 32},
					  {"why", Kind::String, false, kWhyMax},
					  {"decision", Kind::String, false, 64},
					  {"iteration", Kind::UInt, false, 0},
					  {"before", Kind::UInt, false, kRankMax},
					  {"after", Kind::UInt, false, kRankMax},
					  {"duration", Kind::Number, false, 0},
					  {"bytes", Kind::Number, false, 0},
					  {"refusal", Kind::Refusal, false, 0}}},
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
					   {"node", Kind::Id, false, kMaxIdLength},
					   {"from_node", Kind::Id, false, kMaxIdLength},
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
					   {"size", Kind::UInt, false, kRankMax},
					   {"remaining", Kind::UInt, false, kRemainingMax}}},
		{"result",    Channel::Local, {{"app", Kind::Id, true, kMaxIdLength},
					   {"command", Kind::UInt, true, 0},
					   {"ok", Kind::Bool, true, 0},
					   {"text", Kind::String, false, kResultTextMax},
					   {"iteration", Kind::UInt, false, 0},
					   {"before", Kind::UInt, false, kRankMax},
					   {"after", Kind::UInt, false, kRankMax},
					   {"duration", Kind::Number, false, 0},
					   {"bytes", Kind::Number, false, 0},
					   {"refusal", Kind::Refusal, false, 0}}},
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

bool isId(const nlohmann::json &value)
{
	return value.is_string() && isValidId(value.get_ref<const std::string &>().data(),
					      value.get_ref<const std::string &>().size());
}

// What a node can be (docs/protocol.md, "Profiles"): a peer claiming more would fill every view, stretch the WRM
// TTL and feed the sweet spot's size ceiling with nodes that do not exist.
std::optional<std::string> checkProfile(const nlohmann::json &value)
{
	if (!value.is_object())
		return "is not an object";
	for (const ProfileRange &range : profileRanges()) {
		auto it = value.find(range.key);
		if (it == value.end())
			return fmt::format("lacks '{}'", range.key);
		if (!it->is_number())
			return fmt::format("'{}' is not a number", range.key);
		const double v = it->get<double>();
		if (!(v >= range.lowest && v <= range.highest))
			return fmt::format("'{}' = {:.6g} is outside [{:g}, {:g}]", range.key, v, range.lowest,
					   range.highest);
	}
	return std::nullopt;
}

// A refused command's reason (docs/protocol.md, `result`): `kind` an id (pool_exhausted, merge_ranks,
// too_few_active, other; a kind this agent does not know is passed on as it is), `most` the largest count of the same
// operation that could have been done. Other keys are not passed on (the core copies these two).
std::optional<std::string> checkRefusal(const nlohmann::json &value)
{
	if (!value.is_object())
		return "is not an object";
	const auto kind = value.find("kind");
	if (kind == value.end() || !isId(*kind) || kind->get_ref<const std::string &>().size() > 32)
		return "lacks a 'kind' of 1 to 32 id characters";
	if (const auto most = value.find("most");
	    most != value.end() && (!isUnsigned(*most) || most->get<uint64_t>() > uint64_t(kCommandCountMax)))
		return fmt::format("has a 'most' that is not a count of 0 to {}", kCommandCountMax);
	return std::nullopt;
}

// What a work request's origin hosts (docs/protocol.md, `wrm`): per application id, the data units of its active
// processes there and the cores they use. Nothing else is passed on (the core reads these two).
std::optional<std::string> checkHosted(const nlohmann::json &value, std::size_t maxApps)
{
	if (!value.is_object())
		return "is not an object";
	if (value.size() > maxApps)
		return fmt::format("names more than {} applications", maxApps);
	for (const auto &[id, share] : value.items()) {
		if (!isValidId(id.data(), id.size()))
			return "names an application that is not an id";
		const auto units = share.is_object() ? share.find("units") : share.end();
		const auto load = share.is_object() ? share.find("load") : share.end();
		if (units == share.end() || !isUnsigned(*units) || units->get<uint64_t>() > kUnitsMax)
			return fmt::format("gives application '{}' no 'units' of 0 to {}", id, kUnitsMax);
		if (load == share.end() || !load->is_number() || !(load->get<double>() >= 0) ||
		    !(load->get<double>() <= kProfileCoresMax))
			return fmt::format("gives application '{}' no 'load' of 0 to {:g} cores", id, kProfileCoresMax);
	}
	return std::nullopt;
}

// What the root agent knows of the applications it roots (docs/protocol.md, `heartbeat`): per application id, its
// active processes, the seconds of an iteration at that size, the iterations it says are left and the seconds its last
// resize cost. Nothing else is passed on (the core reads these four).
std::optional<std::string> checkRootApps(const nlohmann::json &value, std::size_t maxApps)
{
	if (!value.is_object())
		return "is not an object";
	if (value.size() > maxApps)
		return fmt::format("names more than {} applications", maxApps);
	auto seconds = [](const nlohmann::json &figures, const char *key) {
		const auto it = figures.find(key);
		return it == figures.end() ||
		       (it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() >= 0);
	};
	for (const auto &[id, figures] : value.items()) {
		if (!isValidId(id.data(), id.size()))
			return "names an application that is not an id";
		if (!figures.is_object())
			return fmt::format("gives application '{}' no object", id);
		const auto size = figures.find("size");
		if (size == figures.end() || !isUnsigned(*size) || size->get<uint64_t>() > kRankMax)
			return fmt::format("gives application '{}' no 'size' of 0 to {}", id, kRankMax);
		if (const auto remaining = figures.find("remaining");
		    remaining != figures.end() && (!isUnsigned(*remaining) || remaining->get<uint64_t>() > kRemainingMax))
			return fmt::format("gives application '{}' a 'remaining' that is not a count of 0 to {}", id,
					   kRemainingMax);
		for (const char *key : {"iteration_seconds", "cost"})
			if (!seconds(figures, key))
				return fmt::format("gives application '{}' a '{}' that is not a finite number >= 0", id, key);
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
		if (field.kind == Kind::Id && !isId(value))
			return fmt::format("is not an id ({})", kIdRule);
		return std::nullopt;
	case Kind::GroupId:
		if (!value.is_string() || (!value.get_ref<const std::string &>().empty() && !isId(value)))
			return fmt::format("is not empty or an id ({})", kIdRule);
		return std::nullopt;
	case Kind::Ids:
		if (!value.is_array())
			return "is not an array";
		if (value.size() > field.maxItems)
			return fmt::format("has more than {} elements", field.maxItems);
		for (const nlohmann::json &item : value)
			if (!isId(item))
				return "holds a non-id";
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
	case Kind::Refusal:
		return checkRefusal(value);
	case Kind::Hosted:
		return checkHosted(value, field.maxItems);
	case Kind::RootApps:
		return checkRootApps(value, field.maxItems);
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
	// A client of the local endpoint may leave `from` empty; an agent names itself.
	if (from == message.end() || !from->is_string() ||
	    !(isId(*from) || (channel != Channel::Peer && from->get_ref<const std::string &>().empty())))
		return Rejection{"bad_envelope", fmt::format("'from' is missing or not an id ({})", kIdRule)};
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
				 fmt::format("unknown type '{}'", printableText(typeName, 64))};
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

Message knownFields(const Message &message, Channel channel, std::size_t *dropped)
{
	Message known = Message::object();
	bool otherChannel = false;
	const TypeSpec *spec = findSpec(message["type"].get_ref<const std::string &>(), channel, &otherChannel);
	for (auto it = message.begin(); it != message.end(); ++it) {
		const std::string &key = it.key();
		bool keep = key == "v" || key == "type" || key == "from" || key == "id";
		for (std::size_t i = 0; spec && !keep && i < spec->fields.size(); ++i)
			keep = key == spec->fields[i].name;
		if (keep)
			known[key] = it.value();
		else if (dropped)
			++*dropped;
	}
	return known;
}

const std::vector<ProfileRange> &profileRanges()
{
	static const std::vector<ProfileRange> ranges = {
		{"pw", 0.0, kProfilePowerMax},	 {"apw", 0.0, 1.0},   {"upw", 0.0, 1.0},
		{"sigma", 0.0, 1.0},		 {"ctxsw", 0.0, 1e9}, {"cores", 0.0, kProfileCoresMax},
		{"procs", 0.0, kProfileProcessesMax},
	};
	return ranges;
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
