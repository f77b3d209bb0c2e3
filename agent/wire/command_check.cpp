// SPDX-License-Identifier: Apache-2.0
// The rules of a reconfiguration command beyond what the schema's table can say (a set of names, a lower bound,
// the elements of an array, one field depending on another). One function, because a command is checked where
// it is trusted and where it is carried out: the agent on `force`, the PCM bridge on the `command` it polled, and
// `malleo force` before it bothers an agent.
#include <malleo/message.h>

#include <fmt/format.h>

namespace malleo {

namespace {

// -1 below min, 0 within, 1 above max; min is at least 0. MessagePack decodes every non-negative integer as
// unsigned, a message built in memory may hold it signed.
int compareInteger(const nlohmann::json &value, int64_t min, int64_t max)
{
	if (value.is_number_unsigned())
		return value.get<uint64_t>() < uint64_t(min) ? -1 : value.get<uint64_t>() > uint64_t(max) ? 1 : 0;
	const int64_t v = value.get<int64_t>();
	return v < min ? -1 : v > max ? 1 : 0;
}

} // namespace

std::optional<std::string> checkCommand(const Message &fields)
{
	if (!fields.is_object())
		return "is not an object";
	const auto op = fields.find("op");
	if (op == fields.end() || !op->is_string())
		return "'op' is missing or not a string";
	const std::string &name = op->get_ref<const std::string &>();
	if (name != "split" && name != "merge" && name != "migrate")
		return fmt::format("'op' is '{:.16}', expected split, merge or migrate", name);

	const auto count = fields.find("count");
	if (count == fields.end() || !count->is_number_integer())
		return "'count' is missing or not an integer";
	if (const int c = compareInteger(*count, 1, kCommandCountMax); c < 0)
		return "'count' must be at least 1";
	else if (c > 0)
		return fmt::format("'count' exceeds {}", kCommandCountMax);

	if (const auto node = fields.find("node"); node != fields.end()) {
		if (!node->is_string())
			return "'node' is not a string";
		if (node->get_ref<const std::string &>().empty())
			return "'node' is empty";
		if (node->get_ref<const std::string &>().size() > kMaxIdLength)
			return fmt::format("'node' is longer than {} characters", kMaxIdLength);
		if (name == "merge")
			return "a merge takes no node";
	}

	if (const auto from = fields.find("from_node"); from != fields.end()) {
		if (!from->is_string())
			return "'from_node' is not a string";
		if (from->get_ref<const std::string &>().empty())
			return "'from_node' is empty";
		if (from->get_ref<const std::string &>().size() > kMaxIdLength)
			return fmt::format("'from_node' is longer than {} characters", kMaxIdLength);
		if (name == "split")
			return "a split takes no from_node (its processes are new)";
		if (const auto node = fields.find("node"); node != fields.end() && *node == *from)
			return "'from_node' and 'node' are the same node";
	}

	if (const auto weights = fields.find("weights"); weights != fields.end()) {
		if (!weights->is_array())
			return "'weights' is not an array";
		if (weights->size() > kCommandWeightsMax)
			return fmt::format("'weights' has more than {} elements", kCommandWeightsMax);
		for (const nlohmann::json &w : *weights)
			if (!w.is_number_integer() || compareInteger(w, 1, kCommandWeightMax) != 0)
				return fmt::format("'weights' must be integers from 1 to {}", kCommandWeightMax);
	}

	if (const auto nodes = fields.find("node_weights"); nodes != fields.end()) {
		if (!nodes->is_object())
			return "'node_weights' is not an object";
		if (nodes->size() > kCommandWeightsMax)
			return fmt::format("'node_weights' has more than {} nodes", kCommandWeightsMax);
		for (const auto &[node, w] : nodes->items()) {
			if (node.empty() || node.size() > kMaxIdLength)
				return fmt::format("'node_weights' names a node of 1 to {} characters", kMaxIdLength);
			if (!w.is_number_integer() || compareInteger(w, 1, kCommandWeightMax) != 0)
				return fmt::format("'node_weights' must be integers from 1 to {}", kCommandWeightMax);
		}
		if (fields.contains("weights"))
			return "a command takes 'weights' or 'node_weights', not both";
	}
	return std::nullopt;
}

} // namespace malleo
