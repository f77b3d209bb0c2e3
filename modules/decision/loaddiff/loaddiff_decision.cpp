// SPDX-License-Identifier: Apache-2.0
// Decision module "loaddiff": answers a work-stealing request when this node is
// busier than the requester by a margin. It knows nothing of applications; it is
// the simplest useful answer and the baseline the policy modules improve on.
//
// Options (table "loaddiff"):
//   threshold  0.25  answer when local UPW − origin UPW is at least this
//   min_upw    0.5   and the local UPW is at least this
#include <malleo/config_table.h>
#include <malleo/decision_module.h>

namespace malleo {

namespace {

class LoadDiffDecision : public DecisionModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		ConfigTable t(table, "loaddiff");
		t.number("threshold", threshold_, 0, 1);
		t.number("min_upw", minUpw_, 0, 1);
		t.finish();
		return t.error();
	}

	WorkVerdict onWorkRequest(const DecisionView &view, const WorkRequest &request) override
	{
		double local = view.overlay.local ? view.overlay.local->upw : 0.0;
		double difference = local - request.originProfile.upw;
		WorkVerdict v;
		v.answer = difference >= threshold_ && local >= minUpw_;
		v.reasons = {{"module", "loaddiff"},	   {"local_upw", local},
			     {"origin_upw", request.originProfile.upw}, {"difference", difference},
			     {"threshold", threshold_},	   {"min_upw", minUpw_}};
		return v;
	}

	std::vector<Action> onTick(const DecisionView &) override { return {}; }

private:
	double threshold_ = 0.25;
	double minUpw_ = 0.5;
};

} // namespace

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Decision, "loaddiff", "1.0", malleo::LoadDiffDecision)
