// SPDX-License-Identifier: Apache-2.0
#include "reply_fields.h"

#include <fmt/format.h>

#include <malleo/message.h>

namespace malleo::cli {

const nlohmann::json *field(const nlohmann::json &j, FieldPath path)
{
	const nlohmann::json *at = &j;
	for (const char *key : path) {
		if (!at->is_object())
			return nullptr;
		auto it = at->find(key);
		if (it == at->end())
			return nullptr;
		at = &*it;
	}
	return at;
}

std::optional<double> number(const nlohmann::json &j, FieldPath path)
{
	const nlohmann::json *at = field(j, path);
	if (!at || !at->is_number())
		return std::nullopt;
	return at->get<double>();
}

std::string scalarText(const nlohmann::json &value)
{
	// An agent passes on what its peers said (an endpoint, a version, an error's text): shown, never obeyed.
	if (value.is_string())
		return shownText(value.get_ref<const std::string &>());
	if (value.is_number_float())
		return fmt::format("{:.3g}", value.get<double>());
	// JSON escapes C0 controls but passes C1 ones and invisible marks on as UTF-8.
	return shownText(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string shownText(std::string_view text)
{
	return printableText(text, text.size());
}

std::string text(const nlohmann::json &j, FieldPath path)
{
	const nlohmann::json *at = field(j, path);
	if (!at || at->is_null() || (at->is_string() && at->get_ref<const std::string &>().empty()))
		return "-";
	return scalarText(*at);
}

std::string fixed(const nlohmann::json &j, FieldPath path, int decimals)
{
	std::optional<double> v = number(j, path);
	return v ? fmt::format("{:.{}f}", *v, decimals) : "-";
}

} // namespace malleo::cli
