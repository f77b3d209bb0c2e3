// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <limits>

namespace malleo::policy {

// Split policy of seed 001, eq. 6-12: how many processes an application needs
// so that node l (the one that holds it) and node r (the one asking for work)
// can share it in proportion to their power.

struct SplitInput {
	std::int64_t nTotal = 1;  // processes on l and r now, in data units
	double rho = 0.5;	  // APW_r*PW_r / (APW_r*PW_r + UPW_l*PW_l)
	double tolerance = 0.05;  // accepted predicted imbalance
	std::int64_t nMax = 1024; // never propose more processes than this
	// r at most this: the processes the asking node can run (its free cores, in the holding node's core speed).
	// A smallest n whose r is larger gives way to the least imbalanced split with this r.
	std::int64_t remoteMax = std::numeric_limits<std::int64_t>::max();
};

enum class SplitStatus {
	Found,		 // n, local and remote are set
	NoneWithinLimit, // no n <= nMax meets the tolerance
	InvalidInput,	 // rho outside (0, 1), negative tolerance, nTotal < 1...
};

struct SplitPlan {
	SplitStatus status = SplitStatus::InvalidInput;
	std::int64_t n = 0;	  // total processes after the split
	std::int64_t local = 0;	  // l: processes left on node l, which holds the app
	std::int64_t remote = 0;  // r: processes for the faster, asking node
	double imbalance = 0.0;	  // predicted, see predictedImbalance()
	bool splitNeeded = false; // n > nTotal
	bool remoteCapped = false; // r is remoteMax, below what the tolerance asked for (imbalance may exceed it)
	double lowerFraction = 0; // the interval [a, b] that r/n had to fall in
	double upperFraction = 0;
};

double powerRatio(double apwRemote, double pwRemote, double upwLocal, double pwLocal);
double predictedImbalance(std::int64_t local, std::int64_t remote, double rho);
bool withinTolerance(std::int64_t local, std::int64_t remote, double rho, double tolerance);
SplitPlan planSplit(const SplitInput &input);

} // namespace malleo::policy
