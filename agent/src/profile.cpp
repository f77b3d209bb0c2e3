// SPDX-License-Identifier: Apache-2.0
#include <malleo/profile.h>
#include <malleo/message.h>

#include <cmath>

#include <fmt/format.h>

namespace malleo {

nlohmann::json toJson(const NodeProfile &p)
{
	return {{"pw", p.pw},	  {"apw", p.apw},	  {"upw", p.upw},     {"sigma", p.sigma},
		{"ctxsw", p.ctxswRate}, {"cores", p.cores}, {"procs", p.processes}};
}

std::string fromJson(const nlohmann::json &j, NodeProfile &p)
{
	if (!j.is_object())
		return "profile is not an object";
	// The same ranges as the schema's (profileRanges()): a profile built in memory is held to what a peer's must be.
	double values[7] = {};
	const std::vector<ProfileRange> &ranges = profileRanges();
	for (std::size_t i = 0; i < ranges.size() && i < 7; ++i) {
		auto it = j.find(ranges[i].key);
		if (it == j.end() || !it->is_number())
			return fmt::format("profile '{}' is missing or not a number", ranges[i].key);
		const double v = it->get<double>();
		if (!std::isfinite(v) || v < ranges[i].lowest || v > ranges[i].highest)
			return fmt::format("profile '{}' = {:.6g} is outside [{:g}, {:g}]", ranges[i].key, v,
					   ranges[i].lowest, ranges[i].highest);
		values[i] = v;
	}
	p.pw = values[0];
	p.apw = values[1];
	p.upw = values[2];
	p.sigma = values[3];
	p.ctxswRate = values[4];
	const double cores = values[5], procs = values[6];
	p.cores = static_cast<int>(cores);
	p.processes = static_cast<int>(procs);
	return {};
}

} // namespace malleo
