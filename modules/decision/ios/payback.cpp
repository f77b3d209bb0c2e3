// SPDX-License-Identifier: Apache-2.0
#include "payback.h"

#include <cmath>

namespace malleo::policy {

Payback payback(const PaybackInput &input)
{
	Payback p;
	const bool measured = std::isfinite(input.gain) && input.iterationSeconds > 0.0 &&
			      std::isfinite(input.iterationSeconds) && input.horizonIterations >= 0.0 &&
			      std::isfinite(input.horizonIterations) && input.costSeconds > 0.0 &&
			      std::isfinite(input.costSeconds);
	if (!measured)
		return p;
	p.known = true;
	p.savedSeconds = input.gain * input.iterationSeconds * input.horizonIterations;
	p.pays = p.savedSeconds > input.costSeconds;
	return p;
}

} // namespace malleo::policy
