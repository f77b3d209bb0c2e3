// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace malleo::policy {

// Whether a reconfiguration pays for itself (seed 003, Table 3: the redistribution's overhead against the improvement
// in iteration time): the time it saves over the iterations it has to pay back in, against the time it stalls the
// application.
struct PaybackInput {
	double gain = 0.0;		// predicted relative cut of the iteration time
	double iterationSeconds = 0.0;	// the application's iteration time now (<= 0: not measured)
	double horizonIterations = -1;	// iterations the new configuration is expected to run (< 0: not known)
	double costSeconds = 0.0;	// the stall the reconfiguration is expected to cost (<= 0: not measured)
};

struct Payback {
	bool known = false;	    // every input measured: otherwise nothing is declined for want of evidence
	double savedSeconds = 0.0;  // gain × iteration time × horizon
	bool pays = true;	    // savedSeconds > costSeconds, or not known
};

Payback payback(const PaybackInput &input);

} // namespace malleo::policy
