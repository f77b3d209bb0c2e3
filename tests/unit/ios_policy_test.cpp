// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include <doctest/doctest.h>

#include "merge_policy.h"
#include "payback.h"
#include "refusal_memory.h"
#include "split_policy.h"
#include "transfer_policy.h"

using namespace malleo::policy;

namespace {

/* The definition, tried for every n: the reference the direct search must
 * agree with. Imbalance is convex in r, so for each n the two integers around
 * rho*n (kept in [1, n - 1]) decide whether any r works. */
std::optional<std::int64_t> bruteForceSmallestN(const SplitInput &in)
{
	for (std::int64_t n = std::max<std::int64_t>(in.nTotal, 2); n <= in.nMax; ++n) {
		double ideal = in.rho * static_cast<double>(n);
		for (double guess : {std::floor(ideal), std::ceil(ideal)}) {
			auto r =
			    std::clamp<std::int64_t>(static_cast<std::int64_t>(guess), 1, n - 1);
			if (withinTolerance(n - r, r, in.rho, in.tolerance))
				return n;
		}
	}
	return std::nullopt;
}

} // namespace

TEST_SUITE("split_policy")
{
	TEST_CASE("paper example: one process, remote node three times faster")
	{
		/* PW_r = 3 PW_l, both fully available/used: rho = 3/(3+1). */
		double rho = powerRatio(1.0, 3.0, 1.0, 1.0);
		CHECK(rho == doctest::Approx(0.75));
		SplitPlan plan =
		    planSplit({.nTotal = 1, .rho = rho, .tolerance = 0.05, .nMax = 64});
		REQUIRE(plan.status == SplitStatus::Found);
		CHECK(plan.n == 4);
		CHECK(plan.local == 1);
		CHECK(plan.remote == 3);
		CHECK(plan.imbalance == doctest::Approx(0.0));
		CHECK(plan.splitNeeded);
	}

	TEST_CASE("exact ratio with zero tolerance")
	{
		SplitPlan plan =
		    planSplit({.nTotal = 1, .rho = 0.75, .tolerance = 0.0, .nMax = 64});
		REQUIRE(plan.status == SplitStatus::Found);
		CHECK(plan.n == 4);
		CHECK(plan.remote == 3);

		/* 0.3 is not 3/10 in binary; the slack still accepts 3/10. */
		plan = planSplit({.nTotal = 1, .rho = 0.3, .tolerance = 0.0, .nMax = 64});
		REQUIRE(plan.status == SplitStatus::Found);
		CHECK(plan.n == 10);
		CHECK(plan.remote == 3);
		CHECK(plan.local == 7);
	}

	TEST_CASE("a split is not needed when the processes already divide well")
	{
		/* 8 units, rho = 3/4: 2 + 6 is exact, n stays 8. */
		SplitPlan plan =
		    planSplit({.nTotal = 8, .rho = 0.75, .tolerance = 0.05, .nMax = 64});
		REQUIRE(plan.status == SplitStatus::Found);
		CHECK(plan.n == 8);
		CHECK(plan.local == 2);
		CHECK(plan.remote == 6);
		CHECK_FALSE(plan.splitNeeded);
	}

	TEST_CASE("non-reduced fractions count once n must exceed the simplest one")
	{
		/* Simplest is 3/4 but n >= 7 is required. n = 7 fails (5 + 2:
		 * l = 2 where 1.75 was wanted, +14 %); 6/8 is exact. */
		SplitPlan plan =
		    planSplit({.nTotal = 7, .rho = 0.75, .tolerance = 0.0, .nMax = 64});
		REQUIRE(plan.status == SplitStatus::Found);
		CHECK(plan.n == 8);
		CHECK(plan.remote == 6);
	}

	TEST_CASE("tolerance widens the choice to a smaller n")
	{
		/* rho = 0.7: exact needs 7/10. With 5 % the interval is
		 * [1 - 0.3*1.05, 0.7*1.05] = [0.685, 0.735]; 5/7 = 0.714 fits. */
		SplitPlan exact =
		    planSplit({.nTotal = 1, .rho = 0.7, .tolerance = 0.0, .nMax = 64});
		SplitPlan loose =
		    planSplit({.nTotal = 1, .rho = 0.7, .tolerance = 0.05, .nMax = 64});
		REQUIRE(exact.status == SplitStatus::Found);
		REQUIRE(loose.status == SplitStatus::Found);
		CHECK(exact.n == 10);
		CHECK(loose.n == 7);
		CHECK(loose.remote == 5);
		/* l = 2 where 2.1 was wanted: l/(0.3*7) = 0.952; r/(0.7*7) = 1.0204. */
		CHECK(loose.imbalance == doctest::Approx(5.0 / 4.9 - 1.0));
		CHECK(loose.lowerFraction == doctest::Approx(0.685));
		CHECK(loose.upperFraction == doctest::Approx(0.735));
	}

	TEST_CASE("rho near 0 or 1 needs many processes, capped by nMax")
	{
		SplitPlan plan =
		    planSplit({.nTotal = 1, .rho = 0.01, .tolerance = 0.05, .nMax = 1000});
		REQUIRE(plan.status == SplitStatus::Found);
		/* r = 1 needs 1/(0.01 n) - 1 <= 0.05 -> n >= 95.2. */
		CHECK(plan.n == 96);
		CHECK(plan.remote == 1);

		plan = planSplit({.nTotal = 1, .rho = 0.99, .tolerance = 0.05, .nMax = 1000});
		REQUIRE(plan.status == SplitStatus::Found);
		CHECK(plan.n == 96);
		CHECK(plan.local == 1);

		plan = planSplit({.nTotal = 1, .rho = 0.01, .tolerance = 0.05, .nMax = 95});
		CHECK(plan.status == SplitStatus::NoneWithinLimit);
	}

	TEST_CASE("remoteMax: r never passes what the asking node can run; l balances the r it gets")
	{
		// ρ = 0.98 (a node that looks almost idle holds the application): the smallest n within 5 % is dozens.
		SplitPlan open = planSplit({.nTotal = 1, .rho = 0.98, .tolerance = 0.05, .nMax = 1024});
		REQUIRE(open.status == SplitStatus::Found);
		CHECK(open.remote > 20);
		SplitPlan one = planSplit({.nTotal = 1, .rho = 0.98, .tolerance = 0.05, .nMax = 1024, .remoteMax = 1});
		REQUIRE(one.status == SplitStatus::Found);
		CHECK(one.n == 2);
		CHECK(one.local == 1);
		CHECK(one.remote == 1);
		CHECK(one.remoteCapped);
		CHECK(one.splitNeeded);
		CHECK(one.imbalance == doctest::Approx(predictedImbalance(1, 1, 0.98)));
		// ρ = 0.2, r at most 1: the smallest n, 1 + 4, is within the bound.
		SplitPlan eight = planSplit({.nTotal = 1, .rho = 0.2, .tolerance = 0.0, .nMax = 64, .remoteMax = 1});
		REQUIRE(eight.status == SplitStatus::Found);
		CHECK(eight.remote == 1);
		CHECK(eight.local == 4);
		CHECK_FALSE(eight.remoteCapped); // 1 + 4 is the smallest n anyway: the cap did not bind
		SplitPlan capped = planSplit({.nTotal = 1, .rho = 0.75, .tolerance = 0.0, .nMax = 64, .remoteMax = 2});
		REQUIRE(capped.status == SplitStatus::Found);
		CHECK(capped.remote == 2);
		CHECK(capped.local == 1); // 2 · 0.25 / 0.75 = 0.67: l = 1 is the better of 0 (not allowed) and 1
		CHECK(capped.remoteCapped);
		// l keeps n >= nTotal: 6 processes, r at most 1, ρ = 0.9 (l = 0.11 alone): l = 5.
		SplitPlan many = planSplit({.nTotal = 6, .rho = 0.9, .tolerance = 0.05, .nMax = 64, .remoteMax = 1});
		REQUIRE(many.status == SplitStatus::Found);
		CHECK(many.local == 5);
		CHECK(many.remote == 1);
		CHECK_FALSE(many.splitNeeded);
		// A bound below 1 is a caller's error.
		CHECK(planSplit({.nTotal = 1, .rho = 0.5, .tolerance = 0.05, .nMax = 64, .remoteMax = 0}).status ==
		      SplitStatus::InvalidInput);
		// With a bound, nMax still holds: r = 1 and l >= 1 need n = 2.
		CHECK(planSplit({.nTotal = 1, .rho = 0.99, .tolerance = 0.0, .nMax = 1, .remoteMax = 1}).status ==
		      SplitStatus::NoneWithinLimit);
	}

	TEST_CASE("payback: the time saved over the horizon against the stall, known only when all is measured")
	{
		Payback p = payback({.gain = 0.5, .iterationSeconds = 0.02, .horizonIterations = 50, .costSeconds = 1.0});
		CHECK(p.known);
		CHECK(p.savedSeconds == doctest::Approx(0.5));
		CHECK_FALSE(p.pays);
		CHECK(payback({.gain = 0.5, .iterationSeconds = 0.02, .horizonIterations = 101, .costSeconds = 1.0}).pays);
		for (PaybackInput unknown : {PaybackInput{0.5, 0.0, 50, 1.0}, PaybackInput{0.5, 0.02, -1, 1.0},
					     PaybackInput{0.5, 0.02, 50, 0.0}, PaybackInput{NAN, 0.02, 50, 1.0}}) {
			Payback u = payback(unknown);
			CHECK_FALSE(u.known);
			CHECK(u.pays);
		}
	}

	TEST_CASE("nMax below the current count or below 2 finds nothing")
	{
		CHECK(planSplit({.nTotal = 10, .rho = 0.5, .tolerance = 0.05, .nMax = 9}).status ==
		      SplitStatus::NoneWithinLimit);
		CHECK(planSplit({.nTotal = 1, .rho = 0.5, .tolerance = 0.05, .nMax = 1}).status ==
		      SplitStatus::NoneWithinLimit);
		/* 1/3 with tolerance 0 needs n = 3. */
		CHECK(planSplit({.nTotal = 1, .rho = 1.0 / 3.0, .tolerance = 0.0, .nMax = 2})
			  .status == SplitStatus::NoneWithinLimit);
	}

	TEST_CASE("large tolerance accepts the first n >= 2")
	{
		SplitPlan plan = planSplit({.nTotal = 1, .rho = 0.9, .tolerance = 10.0, .nMax = 8});
		REQUIRE(plan.status == SplitStatus::Found);
		CHECK(plan.n == 2);
		CHECK(plan.local == 1);
		CHECK(plan.remote == 1);
	}

	TEST_CASE("large nTotal keeps n = nTotal when fractions are dense enough")
	{
		SplitPlan plan = planSplit(
		    {.nTotal = 1000000, .rho = 0.123456789, .tolerance = 0.01, .nMax = 2000000});
		REQUIRE(plan.status == SplitStatus::Found);
		CHECK(plan.n == 1000000);
		CHECK_FALSE(plan.splitNeeded);
		CHECK(plan.imbalance <= 0.01);
	}

	TEST_CASE("invalid inputs are reported, not guessed")
	{
		CHECK(planSplit({.nTotal = 1, .rho = 0.0, .tolerance = 0.05, .nMax = 8}).status ==
		      SplitStatus::InvalidInput);
		CHECK(planSplit({.nTotal = 1, .rho = 1.0, .tolerance = 0.05, .nMax = 8}).status ==
		      SplitStatus::InvalidInput);
		CHECK(planSplit({.nTotal = 1, .rho = std::nan(""), .tolerance = 0.05, .nMax = 8})
			  .status == SplitStatus::InvalidInput);
		CHECK(planSplit({.nTotal = 1, .rho = 0.5, .tolerance = -0.1, .nMax = 8}).status ==
		      SplitStatus::InvalidInput);
		CHECK(planSplit({.nTotal = 0, .rho = 0.5, .tolerance = 0.05, .nMax = 8}).status ==
		      SplitStatus::InvalidInput);
		CHECK(std::isnan(powerRatio(0.0, 1.0, 0.0, 1.0)));
	}

	TEST_CASE("property: direct search equals brute force over every n")
	{
		std::mt19937_64 gen(20240501);
		std::uniform_real_distribution<double> unit(0.0, 1.0);
		std::uniform_int_distribution<int> smallN(1, 40);
		std::uniform_int_distribution<int> tolPick(0, 3);
		int found = 0;
		int none = 0;
		for (int i = 0; i < 20000; ++i) {
			SplitInput in;
			/* Mix random doubles with exact small fractions (boundary cases). */
			if (i % 4 == 0) {
				std::uniform_int_distribution<int> den(2, 50);
				int q = den(gen);
				std::uniform_int_distribution<int> num(1, q - 1);
				in.rho = static_cast<double>(num(gen)) / q;
			} else {
				in.rho = std::max(1e-4, std::min(1.0 - 1e-4, unit(gen)));
			}
			const double tols[] = {0.0, 0.001, 0.05, 0.3};
			in.tolerance = tols[tolPick(gen)];
			in.nTotal = i % 10 == 0 ? smallN(gen) * 25 : smallN(gen);
			in.nMax = in.nTotal + static_cast<std::int64_t>(unit(gen) * 400);

			SplitPlan plan = planSplit(in);
			auto reference = bruteForceSmallestN(in);
			CAPTURE(in.rho);
			CAPTURE(in.tolerance);
			CAPTURE(in.nTotal);
			CAPTURE(in.nMax);
			if (!reference) {
				REQUIRE(plan.status == SplitStatus::NoneWithinLimit);
				++none;
				continue;
			}
			REQUIRE(plan.status == SplitStatus::Found);
			++found;
			REQUIRE(plan.n == *reference);
			REQUIRE(plan.n >= in.nTotal);
			REQUIRE(plan.n <= in.nMax);
			REQUIRE(plan.local + plan.remote == plan.n);
			REQUIRE(plan.local >= 1);
			REQUIRE(plan.remote >= 1);
			REQUIRE(plan.imbalance <= in.tolerance + 1e-9);
			REQUIRE(plan.splitNeeded == (plan.n > in.nTotal));
		}
		/* Both outcomes must be exercised for the property to mean much. */
		CHECK(found > 1000);
		CHECK(none > 100);
	}
}

namespace {

/*
 * Requester i: PW 4, APW 0.75 -> P_i = 3, holds 2 units.
 * Receiver j:  PW 2, UPW 0.5  -> P_j = 1, holds 6 units.
 * Eq. 3: Na_i = 3/(3+1) * 8 = 6; Na_j = 2; N_transfer = 6 - 2 = 4.
 * One unit costs 1 PW-second, so compute time = units / P.
 */
TransferInput heterogeneousPair(std::span<const TransferCandidate> candidates, double theta)
{
	TransferInput in;
	in.requester = {.units = 2, .power = 4.0, .fraction = 0.75};
	in.receiver = {.units = 6, .power = 2.0, .fraction = 0.5};
	in.costs = {
	    .workPerUnit = 1.0, .interNodeSecondsPerByte = 1e-6, .intraNodeSecondsPerByte = 1e-7};
	in.theta = theta;
	in.candidates = candidates;
	return in;
}

} // namespace

TEST_SUITE("transfer_policy")
{
	TEST_CASE("shares follow eq. 1-5 with heterogeneous PW and APW")
	{
		TransferShares s = transferShares({.units = 2, .power = 4.0, .fraction = 0.75},
						  {.units = 6, .power = 2.0, .fraction = 0.5});
		CHECK(s.nTotal == 8);
		CHECK(s.targetRequester == doctest::Approx(6.0));
		CHECK(s.targetReceiver == doctest::Approx(2.0));
		CHECK(s.exactTransfer == doctest::Approx(4.0));
		CHECK(s.nTransfer == 4);
	}

	TEST_CASE("N_transfer rounds to the nearest unit, a half down, and clamps")
	{
		/* P_i = 1, P_j = 2, 5 units on j: Na_j = 10/3, exact 5/3 -> 2. */
		TransferShares s = transferShares({.units = 0, .power = 1.0, .fraction = 1.0},
						  {.units = 5, .power = 2.0, .fraction = 1.0});
		CHECK(s.exactTransfer == doctest::Approx(5.0 / 3.0));
		CHECK(s.nTransfer == 2);

		/* Equal powers, 5 units: exact 2.5 -> 2 (moving less on a tie). */
		s = transferShares({.units = 0, .power = 1.0, .fraction = 1.0},
				   {.units = 5, .power = 1.0, .fraction = 1.0});
		CHECK(s.exactTransfer == doctest::Approx(2.5));
		CHECK(s.nTransfer == 2);

		/* The requester is the loaded one: negative, clamped to 0. */
		s = transferShares({.units = 5, .power = 1.0, .fraction = 1.0},
				   {.units = 1, .power = 1.0, .fraction = 1.0});
		CHECK(s.exactTransfer == doctest::Approx(-2.0));
		CHECK(s.nTransfer == 0);

		/* The receiver has no power left for the app: everything goes. */
		s = transferShares({.units = 1, .power = 1.0, .fraction = 0.5},
				   {.units = 3, .power = 1.0, .fraction = 0.0});
		CHECK(s.nTransfer == 3);

		/* Nobody has power: nothing is computed, nothing moves. */
		s = transferShares({.units = 1, .power = 0.0, .fraction = 1.0},
				   {.units = 3, .power = 1.0, .fraction = 0.0});
		CHECK(s.nTransfer == 0);
	}

	TEST_CASE("greedy choice with hand-computed gains")
	{
		const TransferCandidate c[] = {{.id = 10}, {.id = 11}, {.id = 12}, {.id = 13}};
		TransferPlan plan = planTransfer(heterogeneousPair(c, 0.0));
		REQUIRE(plan.stop == TransferStop::BudgetReached);
		REQUIRE(plan.chosen.size() == 4);
		CHECK(plan.unitsChosen == 4);
		/* (2,6): T = max(2/3, 6) = 6 -> (3,5): 5, gain 1/6; then 5 -> 4: 1/5;
		 * 4 -> 3: 1/4; 3 -> max(6/3, 2) = 2: 1/3. Equal candidates keep order. */
		const double gains[] = {1.0 / 6.0, 1.0 / 5.0, 1.0 / 4.0, 1.0 / 3.0};
		for (std::size_t k = 0; k < 4; ++k) {
			CHECK(plan.chosen[k].id == 10 + k);
			CHECK(plan.chosen[k].gain == doctest::Approx(gains[k]));
		}
		CHECK(plan.chosen[0].iterationTimeBefore == doctest::Approx(6.0));
		CHECK(plan.chosen[3].iterationTimeAfter == doctest::Approx(2.0));
	}

	TEST_CASE("a process talking to the requester's side ranks first")
	{
		/* 30 sends 1 MB per iteration to processes on i: 1.0 s while away
		 * from them, 0.1 s beside them. T_stay = 6 + 1 = 7,
		 * T_move = 5 + 0.1 = 5.1: gain 1.9/7, above the plain 1/6. */
		const TransferCandidate c[] = {{.id = 10}, {.id = 30, .bytesWithRequester = 1e6}};
		TransferPlan plan = planTransfer(heterogeneousPair(c, 0.0));
		REQUIRE(plan.chosen.size() == 2);
		CHECK(plan.chosen[0].id == 30);
		CHECK(plan.chosen[0].gain == doctest::Approx(1.9 / 7.0));
		CHECK(plan.chosen[1].id == 10);
		CHECK(plan.chosen[1].gain == doctest::Approx(1.0 / 5.0));
		CHECK(plan.stop == TransferStop::NoCandidates);
	}

	TEST_CASE("a communication-heavy process stays with its partners")
	{
		/* 20 sends 1 MB per iteration to its neighbours on j. After 10 and 11
		 * moved the state is (4,4): T_stay = 4 + 0.1 = 4.1,
		 * T_move = max(5/3, 3) + 1.0 = 4: gain 0.1/4.1 < theta = 0.05. */
		const TransferCandidate c[] = {
		    {.id = 20, .bytesWithReceiver = 1e6}, {.id = 10}, {.id = 11}};
		TransferPlan plan = planTransfer(heterogeneousPair(c, 0.05));
		REQUIRE(plan.chosen.size() == 2);
		CHECK(plan.chosen[0].id == 10);
		CHECK(plan.chosen[1].id == 11);
		CHECK(plan.stop == TransferStop::BelowThreshold);
		CHECK(plan.bestRejectedGain == doctest::Approx(0.1 / 4.1));
		CHECK(plan.unitsChosen < plan.shares.nTransfer);
	}

	TEST_CASE("theta filters candidates: fewer than N_transfer move")
	{
		const TransferCandidate c[] = {{.id = 10}, {.id = 11}, {.id = 12}, {.id = 13}};
		TransferPlan plan = planTransfer(heterogeneousPair(c, 0.2));
		CHECK(plan.shares.nTransfer == 4);
		CHECK(plan.chosen.empty());
		CHECK(plan.stop == TransferStop::BelowThreshold);
		CHECK(plan.bestRejectedGain == doctest::Approx(1.0 / 6.0));

		/* Gain must be strictly above theta. */
		plan = planTransfer(heterogeneousPair(c, 1.0 / 6.0));
		CHECK(plan.chosen.empty());
	}

	TEST_CASE("candidates larger than the remaining budget are skipped")
	{
		/* Budget 4: the 3-unit process fits first (gain: (2,6) -> (5,3),
		 * T 6 -> 3, 1/2), then only a 1-unit one fits. */
		const TransferCandidate c[] = {
		    {.id = 1, .units = 3}, {.id = 2, .units = 2}, {.id = 3}};
		TransferPlan plan = planTransfer(heterogeneousPair(c, 0.0));
		REQUIRE(plan.chosen.size() == 2);
		CHECK(plan.chosen[0].id == 1);
		CHECK(plan.chosen[0].gain == doctest::Approx(0.5));
		CHECK(plan.chosen[1].id == 3);
		CHECK(plan.unitsChosen == 4);
		CHECK(plan.stop == TransferStop::BudgetReached);
	}

	TEST_CASE("moving past the balance point has a negative gain")
	{
		/* Equal powers, 1 + 3 units: exact 1, one moves to (2,2); a second
		 * would give (3,1), T 2 -> 3. Check the gain directly. */
		TransferInput in;
		in.requester = {.units = 1, .power = 1.0, .fraction = 1.0};
		in.receiver = {.units = 3, .power = 1.0, .fraction = 1.0};
		TransferCandidate c{.id = 7};
		CHECK(migrationGain(in, {1, 3}, c) == doctest::Approx(1.0 / 3.0));
		CHECK(migrationGain(in, {2, 2}, c) == doctest::Approx(-0.5));
	}

	TEST_CASE("nothing to transfer and invalid input")
	{
		const TransferCandidate c[] = {{.id = 1}};
		TransferInput in = heterogeneousPair(c, 0.0);
		in.requester.units = 20;
		CHECK(planTransfer(in).stop == TransferStop::NothingToTransfer);

		in = heterogeneousPair(c, 0.0);
		in.receiver.units = -1;
		CHECK(planTransfer(in).stop == TransferStop::InvalidInput);

		const TransferCandidate tooMany[] = {{.id = 1, .units = 7}};
		CHECK(planTransfer(heterogeneousPair(tooMany, 0.0)).stop ==
		      TransferStop::InvalidInput);

		const TransferCandidate empty[] = {{.id = 1, .units = 0}};
		CHECK(planTransfer(heterogeneousPair(empty, 0.0)).stop ==
		      TransferStop::InvalidInput);
	}
}

namespace {

StabilityWindow steadyWindow(double apw, std::size_t k = 5)
{
	StabilityWindow w(k);
	for (std::size_t i = 0; i < k; ++i)
		w.push(apw);
	return w;
}

MergeInput oversubscribed(std::span<const double> peers)
{
	return {.peerSigmas = peers,
		.processes = 8,
		.cores = 4,
		.contextSwitchRate = 20000.0,
		.now = 1000.0,
		.lastSplitTime = 100.0};
}

const MergeParams kParams{
    .epsilon1 = 0.05, .epsilon2 = 0.05, .contextSwitchThreshold = 5000.0, .holdDown = 60.0};

} // namespace

TEST_SUITE("merge_policy")
{
	TEST_CASE("stability window: eq. 13-14 over the last k samples")
	{
		StabilityWindow w(4);
		CHECK(w.size() == 0);
		CHECK(w.stddev() == 0.0);
		for (double v : {0.2, 0.4, 0.6, 0.8})
			w.push(v);
		CHECK(w.full());
		CHECK(w.mean() == doctest::Approx(0.5));
		/* deviations +-0.1, +-0.3: sqrt((0.01+0.09)*2/4) */
		CHECK(w.stddev() == doctest::Approx(std::sqrt(0.05)));
		/* Two more push out 0.2 and 0.4: {0.6, 0.8, 1.0, 1.0}. */
		w.push(1.0);
		w.push(1.0);
		CHECK(w.size() == 4);
		CHECK(w.mean() == doctest::Approx(0.85));

		CHECK(StabilityWindow(0).window() == 1);
		CHECK(StabilityWindow(1000).window() == StabilityWindow::kCapacity);

		const double values[] = {1.0, 3.0};
		CHECK(populationStddev(values) == doctest::Approx(1.0));
		CHECK(populationStddev({}) == 0.0);
	}

	TEST_CASE("fires when every condition holds")
	{
		const double peers[] = {0.01, 0.02, 0.03};
		MergeVerdict v = decideMerge(steadyWindow(0.3), oversubscribed(peers), kParams);
		CHECK(v.merge);
		CHECK(v.reason == MergeBlockNone);
		CHECK(v.blocked == 0);
		CHECK(v.sigmaLocal == doctest::Approx(0.0));
		CHECK(v.sigmaPeers == doctest::Approx(std::sqrt(2.0 / 3.0) * 0.01));
		REQUIRE(v.sinceLastSplit);
		CHECK(*v.sinceLastSplit == doctest::Approx(900.0));

		/* No peers and no split ever: nothing speaks against it. */
		MergeInput alone = oversubscribed({});
		alone.lastSplitTime.reset();
		CHECK(decideMerge(steadyWindow(0.3), alone, kParams).merge);
	}

	TEST_CASE("never fires while the node itself is unstable")
	{
		StabilityWindow w(4);
		for (double v : {0.25, 0.75, 0.25, 0.75})
			w.push(v); /* sigma_i = 0.25, exact in binary */
		MergeVerdict v = decideMerge(w, oversubscribed({}), kParams);
		CHECK_FALSE(v.merge);
		CHECK(v.reason == MergeBlockLocalUnstable);
		CHECK(v.sigmaLocal == 0.25);

		/* sigma_i == epsilon1 blocks (strict), just below passes. */
		MergeParams p = kParams;
		p.epsilon1 = 0.25;
		CHECK_FALSE(decideMerge(w, oversubscribed({}), p).merge);
		p.epsilon1 = 0.25 + 1e-9;
		CHECK(decideMerge(w, oversubscribed({}), p).merge);
	}

	TEST_CASE("never fires before the window is full")
	{
		StabilityWindow w(5);
		for (int i = 0; i < 4; ++i)
			w.push(0.3);
		MergeVerdict v = decideMerge(w, oversubscribed({}), kParams);
		CHECK_FALSE(v.merge);
		CHECK(v.reason == MergeBlockTooFewSamples);
		CHECK(v.samples == 4);
		w.push(0.3);
		CHECK(decideMerge(w, oversubscribed({}), kParams).merge);
	}

	TEST_CASE("never fires while the surroundings are unstable")
	{
		const double peers[] = {0.0, 0.25}; /* sigma = 0.125, exact */
		MergeVerdict v = decideMerge(steadyWindow(0.3), oversubscribed(peers), kParams);
		CHECK_FALSE(v.merge);
		CHECK(v.reason == MergeBlockNeighbourhoodUnstable);
		CHECK(v.sigmaPeers == 0.125);

		MergeParams p = kParams;
		p.epsilon2 = 0.125;
		CHECK_FALSE(decideMerge(steadyWindow(0.3), oversubscribed(peers), p).merge);
		p.epsilon2 = 0.125 + 1e-9;
		CHECK(decideMerge(steadyWindow(0.3), oversubscribed(peers), p).merge);
	}

	TEST_CASE("never fires with no more processes than cores")
	{
		MergeInput in = oversubscribed({});
		in.processes = 4; /* == cores */
		MergeVerdict v = decideMerge(steadyWindow(0.3), in, kParams);
		CHECK_FALSE(v.merge);
		CHECK(v.reason == MergeBlockNotOversubscribed);
		in.processes = 5;
		CHECK(decideMerge(steadyWindow(0.3), in, kParams).merge);
	}

	TEST_CASE("never fires with a low context-switch rate")
	{
		MergeInput in = oversubscribed({});
		in.contextSwitchRate = 5000.0; /* == threshold */
		MergeVerdict v = decideMerge(steadyWindow(0.3), in, kParams);
		CHECK_FALSE(v.merge);
		CHECK(v.reason == MergeBlockFewContextSwitches);
		in.contextSwitchRate = 5000.5;
		CHECK(decideMerge(steadyWindow(0.3), in, kParams).merge);
	}

	TEST_CASE("never fires within the hold-down after a split")
	{
		MergeInput in = oversubscribed({});
		in.lastSplitTime = in.now - 59.5;
		MergeVerdict v = decideMerge(steadyWindow(0.3), in, kParams);
		CHECK_FALSE(v.merge);
		CHECK(v.reason == MergeBlockHoldDown);
		in.lastSplitTime = in.now - 60.0; /* elapsed exactly */
		CHECK(decideMerge(steadyWindow(0.3), in, kParams).merge);
		in.lastSplitTime = in.now + 5.0; /* a split "in the future": hold */
		CHECK_FALSE(decideMerge(steadyWindow(0.3), in, kParams).merge);
	}

	TEST_CASE("a verdict lists every blocking condition, the first as reason")
	{
		const double peers[] = {0.0, 0.2};
		MergeInput in = oversubscribed(peers);
		in.processes = 2;
		in.contextSwitchRate = std::nan("");
		in.lastSplitTime = in.now;
		StabilityWindow w(3);
		w.push(0.0);
		w.push(1.0);
		MergeVerdict v = decideMerge(w, in, kParams);
		CHECK_FALSE(v.merge);
		CHECK(v.reason == MergeBlockTooFewSamples);
		CHECK(v.blocked == (MergeBlockTooFewSamples | MergeBlockLocalUnstable |
				    MergeBlockNeighbourhoodUnstable | MergeBlockNotOversubscribed |
				    MergeBlockFewContextSwitches | MergeBlockHoldDown));
		CHECK(std::string(mergeBlockName(v.reason)) == "too-few-samples");
	}
}

TEST_SUITE("refusal_memory")
{
	using malleo::policy::AppState;
	using malleo::policy::CommandOutcome;
	using malleo::policy::RefusalMemory;

	CommandOutcome refusedSplit(int64_t count, int64_t spares, const std::string &node = "n2")
	{
		return {"heat", false, "split", count, node, "", "pool_exhausted", spares, 1, 1};
	}

	TEST_CASE("a split refused for want of spares caps the next ones onto that node, not onto others")
	{
		RefusalMemory memory(60.0);
		const AppState state{1, 1};
		CHECK_FALSE(memory.added("heat", "n2", state, 10.0));
		memory.learn(refusedSplit(4, 1), state, 10.0);
		auto cap = memory.added("heat", "n2", state, 11.0);
		REQUIRE(cap);
		CHECK(cap->most == 1);
		CHECK(cap->refusal == "pool_exhausted");
		CHECK_FALSE(memory.added("heat", "n3", state, 11.0));  // another node's pool is another matter
		CHECK_FALSE(memory.added("astro", "n2", state, 11.0)); // and so is another application
		CHECK_FALSE(memory.removed("heat", "n2", state, 11.0));
		// The same with a migration refused there.
		memory.learn({"heat", false, "migrate", 2, "n3", "n1", "pool_exhausted", 0, 1, 1}, state, 12.0);
		REQUIRE(memory.added("heat", "n3", state, 12.0));
		CHECK(memory.added("heat", "n3", state, 12.0)->most == 0);
	}

	TEST_CASE("a cap holds until the application's size or its processes here change, or it expires")
	{
		RefusalMemory memory(30.0);
		memory.learn(refusedSplit(4, 1), {1, 1}, 10.0);
		CHECK(memory.added("heat", "n2", {1, 1}, 39.9));
		CHECK_FALSE(memory.added("heat", "n2", {1, 1}, 40.0)); // expired
		CHECK_FALSE(memory.added("heat", "n2", {3, 1}, 11.0)); // the application grew elsewhere
		CHECK_FALSE(memory.added("heat", "n2", {1, 2}, 11.0)); // a process came here
		CHECK(memory.added("heat", "n2", {0, 1}, 11.0));       // a size not known yet checks nothing
		// An agent that is not the root: its registry says the launch's world (one active, one parked).
		memory.learn(refusedSplit(1, 0, "n3"), {2, 1}, 10.0);
		CHECK(memory.added("heat", "n3", {2, 1}, 11.0));
		CHECK_FALSE(memory.added("heat", "n3", {2, 0}, 11.0)); // its process here left
		memory.forget(41.0, [](const std::string &) { return true; });
		CHECK(memory.size() == 0);
		memory.learn(refusedSplit(4, 1), {1, 1}, 50.0);
		memory.forget(51.0, [](const std::string &app) { return app != "heat"; });
		CHECK(memory.size() == 0);
	}

	TEST_CASE("a split done onto the node uses its spares up; any other done command forgets the caps")
	{
		RefusalMemory memory(60.0);
		memory.learn(refusedSplit(4, 3), {1, 1}, 10.0);
		memory.learn({"heat", false, "merge", 1, "", "n1", "merge_ranks", 0, 1, 1}, {1, 1}, 10.0);
		memory.learn({"heat", true, "split", 2, "n2", "", "", -1, 1, 3}, {3, 1}, 11.0);
		auto cap = memory.added("heat", "n2", {3, 1}, 12.0);
		REQUIRE(cap);
		CHECK(cap->most == 1);
		// The agent's registry may still say the size before the split.
		CHECK(memory.added("heat", "n2", {1, 1}, 12.0));
		CHECK_FALSE(memory.removed("heat", "n1", {3, 1}, 12.0)); // the last slots moved: the merge may be possible
		// A merge off n2 gives its pool spares back.
		memory.learn({"heat", true, "merge", 1, "", "n2", "", -1, 3, 2}, {2, 1}, 13.0);
		CHECK_FALSE(memory.added("heat", "n2", {2, 1}, 13.0));
		CHECK(memory.size() == 0);
	}

	TEST_CASE("a merge refused by the C API's rank rule caps merges of that node")
	{
		RefusalMemory memory(60.0);
		memory.learn({"heat", false, "merge", 1, "", "n1", "merge_ranks", 0, 3, 3}, {3, 2}, 10.0);
		auto cap = memory.removed("heat", "n1", {3, 2}, 11.0);
		REQUIRE(cap);
		CHECK(cap->most == 0);
		CHECK_FALSE(memory.added("heat", "n1", {3, 2}, 11.0));
		memory.learn({"heat", false, "merge", 3, "", "n2", "too_few_active", 1, 3, 3}, {3, 2}, 10.0);
		REQUIRE(memory.removed("heat", "n2", {3, 2}, 11.0));
		CHECK(memory.removed("heat", "n2", {3, 2}, 11.0)->most == 1);
	}

	TEST_CASE("refusals that say no count teach nothing: the root agent's, and the bridge's `other`")
	{
		RefusalMemory memory(60.0);
		memory.learn({"heat", false, "split", 4, "n2", "", "", -1, -1, -1}, {1, 1}, 10.0);   // busy, hold-down
		memory.learn({"heat", false, "split", 4, "n2", "", "other", -1, 1, 1}, {1, 1}, 10.0); // spawn failed
		memory.learn({"heat", false, "split", 4, "n2", "", "a_newer_kind", 2, 1, 1}, {1, 1}, 10.0);
		CHECK(memory.size() == 0);
	}
}
