// SPDX-License-Identifier: Apache-2.0
#include "astro_options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace astro {

const char *const kUsage =
	"usage: astro [--stars N] [--iterations N] [--models M] [--seed S] [--progress K] [--help]\n"
	"  Fits the location and scale of a Student-t (4 degrees of freedom) to N synthetic stellar radial\n"
	"  velocities by maximum likelihood (damped Fisher scoring), farmer/worker over the processes, malleable\n"
	"  through libmalleo_pcm (MALLEO_FORCE, MALLEO_POOL_ACTIVE: docs/pcm-api.md).\n"
	"  --stars N       number of stars (default 100000)\n"
	"  --iterations N  iterations, one farmer decision each (default 40)\n"
	"  --models M      trial models tested per iteration: the step damped 1, 1/2 ... 1/2^(M-1) times, M\n"
	"                  likelihood evaluations (default 1; at most 64)\n"
	"  --seed S        seed of the synthetic catalogue, a non-negative integer (default 1)\n"
	"  --progress K    print a progress line every K iterations (default 0: none)\n"
	"  --help          this text\n"
	"  At the end: the fitted parameters, the log-likelihood and a checksum, the same bits whatever the\n"
	"  reconfigurations.\n";

namespace {

constexpr std::int64_t kMostModels = 64;  // each adds a reduction of three exact sums, about 1.6 KiB

bool parseCount(const char *text, std::int64_t lowest, std::int64_t highest, std::int64_t &out)
{
	char *end = nullptr;
	errno = 0;
	const long long value = std::strtoll(text, &end, 10);
	if (!*text || *end || errno || value < lowest || value > highest)
		return false;
	out = value;
	return true;
}

} // namespace

std::string parseOptions(int argc, char **argv, Options &options)
{
	for (int i = 1; i < argc; ++i) {
		const std::string flag = argv[i];
		if (flag == "--help" || flag == "-h") {
			options.help = true;
			continue;
		}
		std::int64_t *target = nullptr;
		std::int64_t lowest = 1;
		std::int64_t highest = std::int64_t{1} << 50;
		std::int64_t seed = 0;
		if (flag == "--stars")
			target = &options.stars;
		else if (flag == "--iterations")
			target = &options.iterations;
		else if (flag == "--models") {
			target = &options.models;
			highest = kMostModels;
		} else if (flag == "--progress") {
			target = &options.progress;
			lowest = 0;
		} else if (flag == "--seed") {
			target = &seed;
			lowest = 0;
		} else
			return "astro: unknown option " + flag + " (see --help)";
		if (i + 1 >= argc)
			return "astro: " + flag + " needs a value";
		if (!parseCount(argv[i + 1], lowest, highest, *target))
			return "astro: " + flag + " " + argv[i + 1] + ": expected an integer from " +
			       std::to_string(lowest) + " to " +
			       (highest == std::int64_t{1} << 50 ? std::string("2^50") : std::to_string(highest));
		if (target == &seed)
			options.seed = static_cast<std::uint64_t>(seed);
		++i;
	}
	return {};
}

} // namespace astro
