// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace malleo::policy {

// Transfer policy of seed 001, eq. 1-5: how much of an application moves from
// an overloaded receiver j of a WRM to the idle requester i, and which
// processes.

struct NodeShare {
	std::int64_t units = 0; // Nb: the application's processes, in data units
	double power = 0.0;	// PW: cores x per-core speed
	double fraction = 0.0;	// APW for the requester, UPW for the receiver
};

struct TransferShares {
	std::int64_t nTotal = 0;      // eq. 1
	double targetRequester = 0.0; // Na_i, eq. 3
	double targetReceiver = 0.0;  // Na_j, eq. 4
	double exactTransfer = 0.0;   // Nb_j - Na_j before rounding (eq. 5)
	std::int64_t nTransfer = 0;   // rounded, within [0, Nb_j]
};

/* A process on the receiver that could move. Bytes are per iteration. */
struct TransferCandidate {
	std::uint64_t id = 0;
	std::int64_t units = 1;
	double bytesWithRequester = 0.0; // exchanged with processes on node i
	double bytesWithReceiver = 0.0;	 // exchanged with the others on node j
};

struct TransferCosts {
	double workPerUnit = 1.0; // work of one data unit per iteration, in PW x seconds
	double interNodeSecondsPerByte = 0.0;
	double intraNodeSecondsPerByte = 0.0;
};

/* Where the application's data units are while moves are being planned. */
struct TransferState {
	std::int64_t unitsOnRequester = 0;
	std::int64_t unitsOnReceiver = 0;
};

struct TransferInput {
	NodeShare requester;
	NodeShare receiver;
	TransferCosts costs;
	double theta = 0.0; // a process moves only if its gain is > theta
	std::span<const TransferCandidate> candidates;
};

struct ChosenProcess {
	std::uint64_t id = 0;
	std::int64_t units = 0;
	double gain = 0.0;
	double iterationTimeBefore = 0.0; // predicted, seconds
	double iterationTimeAfter = 0.0;
};

enum class TransferStop {
	BudgetReached,	   // nTransfer units chosen
	BelowThreshold,	   // the best remaining gain was <= theta
	NoCandidates,	   // no remaining candidate fits the remaining budget
	NothingToTransfer, // nTransfer == 0
	InvalidInput,	   // negative units, no power at all, NaN...
};

struct TransferPlan {
	TransferShares shares;
	std::vector<ChosenProcess> chosen; // in the order they were picked
	std::int64_t unitsChosen = 0;
	TransferStop stop = TransferStop::InvalidInput;
	double bestRejectedGain = 0.0; // with BelowThreshold: the gain that fell short
};

TransferShares transferShares(const NodeShare &requester, const NodeShare &receiver);
double predictedIterationTime(const TransferInput &input, const TransferState &state,
			      const TransferCandidate &candidate, bool moved);
double migrationGain(const TransferInput &input, const TransferState &state,
		     const TransferCandidate &candidate);
TransferPlan planTransfer(const TransferInput &input);

} // namespace malleo::policy
