// SPDX-License-Identifier: Apache-2.0
#include "split_policy.h"

#include <algorithm>
#include <cmath>
#include <optional>

/*
 * Derivation (seed 001, eq. 6-12).
 *
 * Eq. 7-8 ask for r = rho*n and l = (1 - rho)*n exactly. A measured rho is
 * almost never a fraction with a small denominator, so we accept a split whose
 * predicted imbalance is within a tolerance t. With r processes on a node that
 * should carry rho*n of them, that node runs r/(rho*n) times longer than a
 * perfect split; the slower of the two nodes sets the iteration time, hence
 *
 *     imbalance = max(l / ((1 - rho)*n), r / (rho*n)) - 1 <= t.
 *
 * With x = r/n (and l/n = 1 - x) both terms are linear in x:
 *
 *     x / rho <= 1 + t              <=>  x <= b = rho*(1 + t)
 *     (1 - x) / (1 - rho) <= 1 + t  <=>  x >= a = 1 - (1 - rho)*(1 + t)
 *
 * l, r >= 1 adds 0 < x < 1. So we want the smallest denominator n in
 * [max(nTotal, 2), nMax] such that some fraction r/n lies in [a, b] and in
 * (0, 1). r/n need not be reduced: 6/8 is as good as 3/4 when n must be >= 7.
 *
 * The classic Stern-Brocot descent gives the smallest denominator with no
 * lower bound. With the bound we use its Euclid-like form instead. Let
 * S(a, b, lo, hi) be the smallest n in [lo, hi] with an integer in [a*n, b*n].
 *  - Shifting both slopes by an integer c moves every r by c*n and changes
 *    nothing, so take c = floor(a) and make 0 <= a < 1. If a == 0 or b >= 1
 *    every n works, answer lo.
 *  - If [a*lo, b*lo] holds an integer, answer lo.
 *  - Otherwise read the condition the other way round: n works iff some
 *    integer r has r/b <= n <= r/a. Only r >= ceil(a*lo) can reach n >= lo,
 *    and for all of them r/b > lo (else lo would work), so the answer is
 *    ceil(r/b) for the smallest such r that has an integer in [r/b, r/a], and
 *    ceil(r/b) grows with r. That r is S(1/b, 1/a, ceil(a*lo), floor(b*hi)):
 *    the same problem with inverted slopes, exactly one step of the continued
 *    fraction expansion of a and b. floor(b*hi) < hi because b < 1, so the
 *    bound shrinks at every level and the depth is that of Euclid's
 *    algorithm, O(log nMax).
 * The open ends (r >= 1, l >= 1) only matter when a <= 0 or b >= 1; then one
 * side is unconstrained and a closed form gives n (see planSplit()).
 *
 * Measured ratios make exact boundary cases meaningless, but a test with
 * rho = 3/4 and t = 0 must still find 4, so both the interval and the
 * acceptance test widen t by kSlack, far above rounding and far below any
 * tolerance anyone would configure.
 */

namespace malleo::policy {

namespace {

constexpr double kSlack = 1e-9;

using Real = long double;

std::optional<std::int64_t> smallestDenominator(Real a, Real b, std::int64_t lo, std::int64_t hi)
{
	if (lo > hi)
		return std::nullopt;

	Real shift = std::floor(a);
	a -= shift;
	b -= shift;
	if (a <= 0 || b >= 1)
		return lo;

	Real loR = static_cast<Real>(lo);
	if (std::ceil(a * loR) <= std::floor(b * loR))
		return lo;

	auto rLo = static_cast<std::int64_t>(std::ceil(a * loR));
	auto rHi = static_cast<std::int64_t>(std::floor(b * static_cast<Real>(hi)));
	auto r = smallestDenominator(1 / b, 1 / a, rLo, rHi);
	if (!r)
		return std::nullopt;

	auto n = static_cast<std::int64_t>(std::ceil(static_cast<Real>(*r) / b));
	n = std::max(n, lo);
	if (n > hi)
		return std::nullopt;
	return n;
}

/* The imbalance is convex in r with its minimum at rho*n: one of the two
 * integers around it, kept inside [1, n - 1], is the best split of n. */
std::int64_t bestRemote(std::int64_t n, double rho)
{
	Real ideal = static_cast<Real>(rho) * static_cast<Real>(n);
	auto down =
	    std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(ideal)), 1, n - 1);
	auto up = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(ideal)), 1, n - 1);
	return predictedImbalance(n - up, up, rho) < predictedImbalance(n - down, down, rho) ? up
											     : down;
}

std::int64_t ceilToInt(double x)
{
	return static_cast<std::int64_t>(std::ceil(x));
}

/* r fixed at remoteMax: the imbalance falls with l while node r's term is the larger and rises after, the two equal at
 * l = r(1 - rho)/rho; one of the integers around it, at least 1 and enough to keep n >= nTotal, is the best l. */
SplitPlan cappedPlan(const SplitInput &input, SplitPlan plan)
{
	const std::int64_t r = input.remoteMax;
	const std::int64_t lMin = std::max<std::int64_t>(1, input.nTotal - r);
	const std::int64_t lMax = input.nMax - r;
	plan.status = SplitStatus::NoneWithinLimit;
	if (lMin > lMax)
		return plan;
	const Real ideal = static_cast<Real>(r) * (1 - static_cast<Real>(input.rho)) / static_cast<Real>(input.rho);
	auto down = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(ideal)), lMin, lMax);
	auto up = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(ideal)), lMin, lMax);
	const std::int64_t l =
	    predictedImbalance(up, r, input.rho) < predictedImbalance(down, r, input.rho) ? up : down;
	plan.status = SplitStatus::Found;
	plan.n = l + r;
	plan.local = l;
	plan.remote = r;
	plan.imbalance = predictedImbalance(l, r, input.rho);
	plan.splitNeeded = plan.n > input.nTotal;
	plan.remoteCapped = true;
	return plan;
}

} // namespace

/* Eq. 7: the share of the work the remote (asking) node should carry. */
double powerRatio(double apwRemote, double pwRemote, double upwLocal, double pwLocal)
{
	double remote = apwRemote * pwRemote;
	double local = upwLocal * pwLocal;
	if (!(remote + local > 0))
		return std::nan("");
	return remote / (remote + local);
}

double predictedImbalance(std::int64_t local, std::int64_t remote, double rho)
{
	double n = static_cast<double>(local + remote);
	double l = static_cast<double>(local) / ((1.0 - rho) * n);
	double r = static_cast<double>(remote) / (rho * n);
	return std::max(l, r) - 1.0;
}

bool withinTolerance(std::int64_t local, std::int64_t remote, double rho, double tolerance)
{
	if (local < 1 || remote < 1)
		return false;
	return predictedImbalance(local, remote, rho) <= tolerance + kSlack;
}

/*
 * Smallest n >= max(nTotal, 2), n <= nMax, with l + r = n, l, r >= 1 and a
 * predicted imbalance within the tolerance; see the derivation above. When
 * that n's r passes remoteMax, or no n within nMax meets the tolerance while r
 * is bounded, the best split with r = remoteMax (cappedPlan()). The
 * result is always re-checked with withinTolerance(), the predicate callers
 * and tests use, so rounding in the search can never return a bad split.
 */
SplitPlan planSplit(const SplitInput &input)
{
	SplitPlan plan;
	const double rho = input.rho;
	const double tol = input.tolerance;
	if (input.nTotal < 1 || !(rho > 0.0 && rho < 1.0) || !(tol >= 0.0) || !std::isfinite(tol) ||
	    input.remoteMax < 1)
		return plan;

	const double scale = 1.0 + tol + kSlack;
	const double a = 1.0 - (1.0 - rho) * scale;
	const double b = rho * scale;
	plan.lowerFraction = std::max(a, 0.0);
	plan.upperFraction = std::min(b, 1.0);
	plan.status = SplitStatus::NoneWithinLimit;

	std::int64_t lo = std::max<std::int64_t>(input.nTotal, 2);
	const std::int64_t hi = input.nMax;

	/* A handful of retries absorb a candidate that rounding put just
	 * outside the tolerance; in practice the first candidate is it. */
	for (int attempt = 0; attempt < 64 && lo <= hi; ++attempt) {
		std::optional<std::int64_t> n;
		if (a <= 0.0 && b >= 1.0)
			n = lo;
		else if (a <= 0.0)
			n = std::max(lo, ceilToInt(1.0 / b));
		else if (b >= 1.0)
			n = std::max(lo, ceilToInt(1.0 / (1.0 - a)));
		else
			n = smallestDenominator(a, b, lo, hi);
		if (!n || *n > hi)
			return input.remoteMax < hi ? cappedPlan(input, plan) : plan;

		std::int64_t remote = bestRemote(*n, rho);
		if (!withinTolerance(*n - remote, remote, rho, tol)) {
			lo = *n + 1;
			continue;
		}

		if (remote > input.remoteMax)
			return cappedPlan(input, plan);
		plan.status = SplitStatus::Found;
		plan.n = *n;
		plan.remote = remote;
		plan.local = *n - remote;
		plan.imbalance = predictedImbalance(plan.local, remote, rho);
		plan.splitNeeded = *n > input.nTotal;
		return plan;
	}
	return input.remoteMax < hi ? cappedPlan(input, plan) : plan;
}

} // namespace malleo::policy
