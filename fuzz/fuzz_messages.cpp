// SPDX-License-Identifier: Apache-2.0
// Fuzz target: every message type's validation. The first byte picks a type of the schema (peer types, then local
// ones); the rest, MessagePack, gives its fields, which are set on a valid envelope of that type. What passes is
// then read as the agent's handlers read it: profiles, commands, ids and numbers.
#include <malleo/message.h>
#include <malleo/profile.h>

#include <cstdint>
#include <cstdlib>

namespace {

// The reads a handler does after validation: each must hold for a message that passed.
void readAsHandlers(const malleo::Message &m)
{
	for (const char *key : {"profile", "origin_profile"})
		if (auto it = m.find(key); it != m.end()) {
			malleo::NodeProfile profile;
			if (!malleo::fromJson(*it, profile).empty())
				std::abort(); // the schema passed a profile the core refuses
		}
	for (const char *key : {"visited", "roots"})
		if (auto it = m.find(key); it != m.end())
			for (const auto &id : *it)
				if (!id.is_string() || !malleo::isValidId(id.get_ref<const std::string &>().data(), id.size()))
					std::abort();
	for (const char *key : {"wrm_id", "ttl", "hops", "count", "rank", "size", "pid", "iteration", "command"})
		if (auto it = m.find(key); it != m.end())
			(void)it->get<uint64_t>();
	const std::string &type = m["type"].get_ref<const std::string &>();
	if (type == "force" || type == "reconf_request")
		(void)malleo::checkCommand(m);
	(void)m.value("group", "");
	(void)m.value("in_view", true);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const std::vector<std::pair<std::string, malleo::Channel>> types = [] {
		std::vector<std::pair<std::string, malleo::Channel>> all;
		for (malleo::Channel c : {malleo::Channel::Peer, malleo::Channel::Local})
			for (const std::string &t : malleo::messageTypes(c))
				all.emplace_back(t, c);
		return all;
	}();
	if (size < 1)
		return 0;
	const auto &[type, channel] = types[data[0] % types.size()];
	uint8_t header[malleo::kWireHeaderSize];
	malleo::writeWireHeader(header, 1);
	malleo::Message fields;
	if (malleo::decodeMessage(header, std::span<const uint8_t>(data + 1, size - 1), malleo::kDefaultMaxMessageBytes,
				  fields) ||
	    !fields.is_object())
		return 0;
	malleo::Message message = malleo::makeMessage(type, "fuzz", 1);
	for (auto it = fields.begin(); it != fields.end(); ++it)
		if (it.key() != "v" && it.key() != "type" && it.key() != "from" && it.key() != "id")
			message[it.key()] = it.value();
	if (malleo::validateMessage(message, channel))
		return 0;
	readAsHandlers(malleo::knownFields(message, channel));
	return 0;
}
