// SPDX-License-Identifier: Apache-2.0
// Decision module "none": never reconfigures — the static baseline.
#include <malleo/decision_module.h>

namespace malleo {

namespace {

class NoneDecision : public DecisionModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		if (!table.is_object() || !table.empty())
			return "config key 'none': this module takes no options";
		return {};
	}

	WorkVerdict onWorkRequest(const DecisionView &, const WorkRequest &) override
	{
		return {false, {{"module", "none"}}, {}};
	}

	std::vector<Action> onTick(const DecisionView &) override { return {}; }
};

} // namespace

} // namespace malleo

MALLEO_MODULE(malleo::ModuleKind::Decision, "none", "1.0", malleo::NoneDecision)
