// SPDX-License-Identifier: Apache-2.0
#include <malleo/profile.h>

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
	auto number = [&](const char *key, double lo, double hi, double &out) -> std::string {
		auto it = j.find(key);
		if (it == j.end() || !it->is_number())
			return fmt::format("profile '{}' is missing or not a number", key);
		double v = it->get<double>();
		if (!std::isfinite(v) || v < lo || v > hi)
			return fmt::format("profile '{}' = {} is outside [{}, {}]", key, v, lo, hi);
		out = v;
		return {};
	};
	double cores = 0, procs = 0;
	std::string err;
	if (!(err = number("pw", 0.0, 1e9, p.pw)).empty() ||
	    !(err = number("apw", 0.0, 1.0, p.apw)).empty() ||
	    !(err = number("upw", 0.0, 1.0, p.upw)).empty() ||
	    !(err = number("sigma", 0.0, 1.0, p.sigma)).empty() ||
	    !(err = number("ctxsw", 0.0, 1e12, p.ctxswRate)).empty() ||
	    !(err = number("cores", 0.0, 1e6, cores)).empty() ||
	    !(err = number("procs", 0.0, 1e9, procs)).empty())
		return err;
	p.cores = static_cast<int>(cores);
	p.processes = static_cast<int>(procs);
	return {};
}

} // namespace malleo
