// SPDX-License-Identifier: Apache-2.0
// Decision module "skeleton": the smallest complete module, to copy when
// writing your own. Built as a shared object, it is found by the agent as
// malleo-decision-skeleton.so on the module path and loaded by
// {"modules": {"decision": "skeleton"}}.
//
// Options (table "skeleton"):
//   answer  false  answer every work-stealing request
#include <malleo/config_table.h>
#include <malleo/decision_module.h>

namespace {

class SkeletonDecision : public malleo::DecisionModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		malleo::ConfigTable t(table, "skeleton");
		t.boolean("answer", answer_);
		t.finish();
		return t.error();
	}

	malleo::WorkVerdict onWorkRequest(const malleo::DecisionView &,
					  const malleo::WorkRequest &request) override
	{
		return {answer_, {{"module", "skeleton"}, {"origin", request.origin}}, {}};
	}

	std::vector<malleo::Action> onTick(const malleo::DecisionView &) override { return {}; }

private:
	bool answer_ = false;
};

} // namespace

MALLEO_MODULE(malleo::ModuleKind::Decision, "skeleton", "1.0", SkeletonDecision)
