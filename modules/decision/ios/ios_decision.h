// SPDX-License-Identifier: Apache-2.0
// The "ios" decision module's class, shared by its three files: ios_decision.cpp (options, results, the merge on a
// tick), ios_work_request.cpp (the answer to a work request: transfer and split) and ios_leaving.cpp (processes
// leaving a node: evacuation from a loaded node, and a drain).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <malleo/decision_module.h>

#include "merge_policy.h"
#include "payback.h"
#include "prediction_check.h"
#include "refusal_view.h"
#include "split_policy.h"
#include "transfer_policy.h"

namespace malleo::ios {

struct IosOptions {
	double theta = 0.05;
	double tolerance = 0.05;
	int64_t nMax = 1024;
	policy::MergeParams merge;
	size_t stabilityWindow = 10;
	policy::TransferCosts costs{1.0, 1e-9, 1e-10};
	double evacuateLoad = 0.5;
	int64_t evacuateTicks = 3;
	bool migrationOnly = false;
	double mergeRetry = 5.0;
	double settle = 2.0;
	double refusalMemory = 60.0;
	bool originUnits = false;
};

// What a predicted gain is worth for one application: the share of it that can come true (app_demand.h,
// prediction_check.h) and what the reconfiguration must pay back (payback.h; its gain set per plan).
struct GainWorth {
	double realizable = 1.0;
	policy::PaybackInput payback;
};

// What the module found for one application on a WRM.
struct AppPlan {
	std::vector<Action> actions;
	double gain = 0.0;
	nlohmann::json summary;
};

using policy::activeCount;
using policy::appState;

class IosDecision : public DecisionModule
{
public:
	std::string configure(const nlohmann::json &table) override;
	WorkVerdict onWorkRequest(const DecisionView &view, const WorkRequest &request) override;
	std::vector<Action> onTick(const DecisionView &view) override;
	std::vector<Action> onDrain(const DecisionView &view) override;
	void onCommandResult(const DecisionView &view, const CommandResult &result) override;

private:
	std::vector<Action> evacuate(const DecisionView &view);
	std::pair<const PeerEntry *, double> bestPeerFor(const DecisionView &view, const ApplicationInfo &app,
							 int64_t count, double speedHere) const;
	AppPlan planFor(const DecisionView &view, const WorkRequest &request,
			const ApplicationInfo &app) const;
	// `spares`: what the bridge said of the origin's spare processes, if it still holds (refusal_memory.h).
	AppPlan planSplit(const WorkRequest &request, const ApplicationInfo &app,
			  const policy::SplitPlan &split, const policy::TransferInput &base,
			  double bytesLocal, const GainWorth &worth, nlohmann::json reasons,
			  const std::optional<policy::RefusalCap> &spares) const;
	void migrateInstead(const WorkRequest &request, const ApplicationInfo &app, int64_t remote,
			    nlohmann::json reasons, AppPlan &plan) const;
	AppPlan planTransfer(const WorkRequest &request, const ApplicationInfo &app,
			     policy::TransferInput input, const GainWorth &worth, nlohmann::json reasons,
			     const std::optional<policy::RefusalCap> &spares) const;

	void learnConfigurationLifetime(const DecisionView &view);
	// The processes on this node, and when the latest split here took effect.
	struct NodeLoad {
		int64_t processes = 0;
		std::optional<double> lastSplit;
	};
	static NodeLoad nodeLoad(const DecisionView &view, const NodeProfile &here);
	int64_t mayLeave(const DecisionView &view, const ApplicationInfo &app) const;
	const ApplicationInfo *mergeTarget(const DecisionView &view) const;
	Action mergeAction(const DecisionView &view, const NodeProfile &here, const ApplicationInfo &target,
			   const policy::MergeVerdict &verdict, int64_t processes, size_t peers);
	policy::PaybackInput paybackOf(const ApplicationInfo &app) const;
	std::string splitBelowTheta(double modelGain, double realizable) const;
	std::optional<std::string> wouldNotPayBack(const GainWorth &worth, double gain, nlohmann::json &reasons) const;

	IosOptions options_;
	policy::StabilityWindow window_{options_.stabilityWindow};
	struct MergeProposal {
		int64_t processes; // local processes when proposed
		double at;
	};
	std::map<std::string, MergeProposal> mergeProposed_; // app -> the last merge proposed for it
	int64_t loadedTicks_ = 0;			// ticks in a row with the node loaded by others
	std::map<std::string, std::vector<std::string>> drainTried_; // app -> peers proposed while draining
	policy::RefusalMemory refusals_{options_.refusalMemory};     // what the bridge said it cannot do
	PredictionCheck predictions_; // whether the splits decided here gained what they predicted
	// How long an application's configurations last on this cluster (seconds between its reconfigurations, an
	// average); -1 until one has been seen: the horizon of a payback where the application does not say its
	// remaining iterations.
	double configurationLifetime_ = -1.0;
	std::map<std::string, double> lastReconfigurationSeen_;
};

} // namespace malleo::ios
