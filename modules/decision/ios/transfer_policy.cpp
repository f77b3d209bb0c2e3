// SPDX-License-Identifier: Apache-2.0
#include "transfer_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

/*
 * Gain model.
 *
 * The applications are bulk synchronous: every iteration waits for the
 * slowest node, so the iteration time is set by the more loaded of i and j.
 * The application gets P_i = APW_i * PW_i on the requester (what is free
 * there) and P_j = UPW_j * PW_j on the receiver (what it is using there), the
 * same powers eq. 2 balances. With W_i, W_j data units on each node and w_u
 * the work of one unit per iteration, the compute part is
 *
 *     C(W_i, W_j) = max(W_i * w_u / P_i, W_j * w_u / P_j).
 *
 * A candidate exchanging b_i bytes per iteration with processes on i and b_j
 * with the other processes on j pays, with per-byte costs c_inter > c_intra,
 *
 *     on j:  b_i * c_inter + b_j * c_intra
 *     on i:  b_i * c_intra + b_j * c_inter
 *
 * and sits on the critical path (its partners wait for its messages), so
 *
 *     T_stay = C(W_i, W_j)             + comm on j
 *     T_move = C(W_i + w, W_j - w)     + comm on i
 *     gain   = (T_stay - T_move) / T_stay
 *
 * the predicted relative reduction of the iteration time. It rewards the CPU
 * speed-up of leaving j for i's free power, charges the bytes that become
 * inter-node and credits those that become intra-node: a process that talks
 * mostly to its neighbours on j loses its gain and stays with them.
 *
 * Processes are chosen greedily: the best gain, then the gains again from the
 * state that move leaves, until nTransfer units are chosen or the best gain
 * is <= theta. Re-evaluating after each move keeps the plan from overshooting
 * the balance when processes have different sizes. Bytes between two
 * candidates that both move are still counted as inter-node: the per-process
 * totals we get do not say which partner the bytes go to.
 */

namespace malleo::policy {

namespace {

bool validNode(const NodeShare &node)
{
	return node.units >= 0 && std::isfinite(node.power) && node.power >= 0.0 &&
	       std::isfinite(node.fraction) && node.fraction >= 0.0;
}

double computeTime(const TransferInput &input, std::int64_t units, const NodeShare &node)
{
	if (units == 0)
		return 0.0;
	double power = node.fraction * node.power;
	if (power <= 0.0)
		return std::numeric_limits<double>::infinity();
	return static_cast<double>(units) * input.costs.workPerUnit / power;
}

} // namespace

/* Eq. 1-5. N_transfer is rounded to the nearest whole unit, a half rounding
 * down: when two splits are equally balanced, moving less disturbs less. */
TransferShares transferShares(const NodeShare &requester, const NodeShare &receiver)
{
	TransferShares shares;
	shares.nTotal = requester.units + receiver.units;
	double pi = requester.fraction * requester.power;
	double pj = receiver.fraction * receiver.power;
	if (!(pi + pj > 0.0))
		return shares;

	double total = static_cast<double>(shares.nTotal);
	shares.targetRequester = pi / (pi + pj) * total;
	shares.targetReceiver = total - shares.targetRequester;
	shares.exactTransfer = static_cast<double>(receiver.units) - shares.targetReceiver;
	auto rounded = static_cast<std::int64_t>(std::ceil(shares.exactTransfer - 0.5));
	shares.nTransfer = std::clamp<std::int64_t>(rounded, 0, receiver.units);
	return shares;
}

double predictedIterationTime(const TransferInput &input, const TransferState &state,
			      const TransferCandidate &candidate, bool moved)
{
	const TransferCosts &c = input.costs;
	std::int64_t wi = state.unitsOnRequester + (moved ? candidate.units : 0);
	std::int64_t wj = state.unitsOnReceiver - (moved ? candidate.units : 0);
	double compute = std::max(computeTime(input, wi, input.requester),
				  computeTime(input, wj, input.receiver));
	double comm = moved ? candidate.bytesWithRequester * c.intraNodeSecondsPerByte +
				  candidate.bytesWithReceiver * c.interNodeSecondsPerByte
			    : candidate.bytesWithRequester * c.interNodeSecondsPerByte +
				  candidate.bytesWithReceiver * c.intraNodeSecondsPerByte;
	return compute + comm;
}

double migrationGain(const TransferInput &input, const TransferState &state,
		     const TransferCandidate &candidate)
{
	double stay = predictedIterationTime(input, state, candidate, false);
	double move = predictedIterationTime(input, state, candidate, true);
	if (!std::isfinite(move))
		return -std::numeric_limits<double>::infinity();
	if (!std::isfinite(stay))
		return 1.0; // leaving a node with no power removes all of the time
	if (stay <= 0.0)
		return 0.0;
	return (stay - move) / stay;
}

TransferPlan planTransfer(const TransferInput &input)
{
	TransferPlan plan;
	if (!validNode(input.requester) || !validNode(input.receiver) ||
	    !(input.costs.workPerUnit >= 0.0) || !(input.costs.interNodeSecondsPerByte >= 0.0) ||
	    !(input.costs.intraNodeSecondsPerByte >= 0.0) || std::isnan(input.theta))
		return plan;
	std::int64_t candidateUnits = 0;
	for (const TransferCandidate &candidate : input.candidates) {
		if (candidate.units < 1 || !(candidate.bytesWithRequester >= 0.0) ||
		    !(candidate.bytesWithReceiver >= 0.0))
			return plan;
		candidateUnits += candidate.units;
	}
	/* Candidates are processes on j: they cannot hold more than j has. */
	if (candidateUnits > input.receiver.units)
		return plan;

	plan.shares = transferShares(input.requester, input.receiver);
	if (plan.shares.nTransfer == 0) {
		plan.stop = TransferStop::NothingToTransfer;
		return plan;
	}

	TransferState state{input.requester.units, input.receiver.units};
	std::vector<bool> taken(input.candidates.size(), false);
	std::int64_t budget = plan.shares.nTransfer;
	while (budget > 0) {
		std::size_t best = input.candidates.size();
		double bestGain = -std::numeric_limits<double>::infinity();
		for (std::size_t k = 0; k < input.candidates.size(); ++k) {
			const TransferCandidate &candidate = input.candidates[k];
			if (taken[k] || candidate.units > budget)
				continue;
			double gain = migrationGain(input, state, candidate);
			/* Strictly greater: ties keep the caller's order. */
			if (best == input.candidates.size() || gain > bestGain) {
				best = k;
				bestGain = gain;
			}
		}
		if (best == input.candidates.size()) {
			plan.stop = TransferStop::NoCandidates;
			return plan;
		}
		if (!(bestGain > input.theta)) {
			plan.stop = TransferStop::BelowThreshold;
			plan.bestRejectedGain = bestGain;
			return plan;
		}

		const TransferCandidate &candidate = input.candidates[best];
		plan.chosen.push_back({candidate.id, candidate.units, bestGain,
				       predictedIterationTime(input, state, candidate, false),
				       predictedIterationTime(input, state, candidate, true)});
		taken[best] = true;
		state.unitsOnRequester += candidate.units;
		state.unitsOnReceiver -= candidate.units;
		plan.unitsChosen += candidate.units;
		budget -= candidate.units;
	}
	plan.stop = TransferStop::BudgetReached;
	return plan;
}

} // namespace malleo::policy
