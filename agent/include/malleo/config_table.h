// SPDX-License-Identifier: Apache-2.0
// Strict reading of one configuration table, for the agent and for modules:
// every key is checked for type and range, an unknown key is an error, and the
// first problem is reported as one line naming the key.
//
//	malleo::ConfigTable t(table, "p2p");
//	t.integer("view_size", viewSize_, 1, 1024);
//	t.finish();
//	return t.error();
#pragma once

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace malleo {

// Reads the keys of one table, refusing unknown ones; the first problem wins.
class ConfigTable
{
public:
	ConfigTable(const nlohmann::json &table, std::string section)
		: table_(table), section_(std::move(section))
	{
		if (!table_.is_object())
			fail("", "expected a table (JSON object)");
	}

	const std::string &error() const { return error_; }

	void number(const char *key, double &out, double min, double max)
	{
		const nlohmann::json *v = take(key);
		if (!v)
			return;
		if (!v->is_number() || !std::isfinite(v->get<double>()))
			return fail(key, fmt::format("expected a number, got {}", v->dump()));
		double d = v->get<double>();
		if (d < min || d > max)
			return fail(key, fmt::format("{} is outside [{}, {}]", d, min, max));
		out = d;
	}

	template <typename Int>
	void integer(const char *key, Int &out, uint64_t min, uint64_t max)
	{
		const nlohmann::json *v = take(key);
		if (!v)
			return;
		if (!v->is_number_integer() || (v->is_number_integer() && !v->is_number_unsigned() &&
						v->get<int64_t>() < 0))
			return fail(key, fmt::format("expected a non-negative integer, got {}", v->dump()));
		uint64_t n = v->get<uint64_t>();
		if (n < min || n > max)
			return fail(key, fmt::format("{} is outside [{}, {}]", n, min, max));
		out = static_cast<Int>(n);
	}

	void boolean(const char *key, bool &out)
	{
		const nlohmann::json *v = take(key);
		if (!v)
			return;
		if (!v->is_boolean())
			return fail(key, fmt::format("expected true or false, got {}", v->dump()));
		out = v->get<bool>();
	}

	void string(const char *key, std::string &out, bool allowEmpty = false)
	{
		const nlohmann::json *v = take(key);
		if (!v)
			return;
		if (!v->is_string() || (!allowEmpty && v->get_ref<const std::string &>().empty()))
			return fail(key, fmt::format("expected a non-empty string, got {}", v->dump()));
		out = v->get<std::string>();
	}

	void strings(const char *key, std::vector<std::string> &out)
	{
		const nlohmann::json *v = take(key);
		if (!v)
			return;
		if (!v->is_array())
			return fail(key, fmt::format("expected a list of strings, got {}", v->dump()));
		std::vector<std::string> list;
		for (const nlohmann::json &item : *v) {
			if (!item.is_string() || item.get_ref<const std::string &>().empty())
				return fail(key, fmt::format("expected a list of strings, got {}", v->dump()));
			list.push_back(item.get<std::string>());
		}
		out = std::move(list);
	}

	// Call last: reports a key nobody asked for.
	void finish()
	{
		if (!error_.empty() || !table_.is_object())
			return;
		for (const auto &[key, value] : table_.items())
			if (!seen_.count(key))
				return fail(key.c_str(), "unknown key");
	}

	void fail(const char *key, const std::string &what)
	{
		if (!error_.empty())
			return;
		std::string name = *key ? fmt::format("{}.{}", section_, key) : section_;
		error_ = fmt::format("config key '{}': {}", name, what);
	}

private:
	const nlohmann::json *take(const char *key)
	{
		seen_.insert(key);
		if (!error_.empty() || !table_.is_object())
			return nullptr;
		auto it = table_.find(key);
		return it == table_.end() ? nullptr : &*it;
	}

	const nlohmann::json &table_;
	std::string section_;
	std::set<std::string> seen_;
	std::string error_;
};

} // namespace malleo
