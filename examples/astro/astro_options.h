// SPDX-License-Identifier: Apache-2.0
// astro's command line.
#pragma once

#include <cstdint>
#include <string>

namespace astro {

struct Options {
	std::int64_t stars = 100000;
	std::int64_t iterations = 40;
	std::int64_t models = 1;    // trial models tested per iteration (student_t_fit.h)
	std::uint64_t seed = 1;
	std::int64_t progress = 0;  // print a progress line every this many iterations; 0: none
	bool help = false;
};

extern const char *const kUsage;

// Parses argv[1..]; on bad input returns one line saying what is wrong, and an empty string otherwise.
std::string parseOptions(int argc, char **argv, Options &options);

} // namespace astro
