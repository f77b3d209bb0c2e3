// SPDX-License-Identifier: Apache-2.0
// Named event counters: every message class, rejection and decision is counted.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace malleo {

class Counters
{
public:
	void add(const std::string &name, uint64_t n = 1) { values_[name] += n; }
	uint64_t get(const std::string &name) const
	{
		auto it = values_.find(name);
		return it == values_.end() ? 0 : it->second;
	}
	nlohmann::json toJson() const { return nlohmann::json(values_); }

private:
	std::map<std::string, uint64_t> values_;
};

} // namespace malleo
