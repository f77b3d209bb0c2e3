// SPDX-License-Identifier: Apache-2.0
// Decision module "greedy", built out of tree against an installed malleo with
// pkg-config alone (see the Makefile and README.md beside this file).
//
// Greedy answers the first work-stealing request whose origin is idle enough,
// and gives it half of the active processes of the largest malleable
// application on this node, without weighing gains as `ios` does: the first
// idle node that asks gets the work. It makes a simple, predictable policy to
// compare the others with, and shows what a module needs: a strict config
// table, pure decisions on the view it is given, and reasons on every answer.
//
// Options (table "greedy"):
//   min_idle  0.5  answer an origin whose available CPU share (APW) is at least this
//   max_give  4    give at most this many processes per answer
//
//	{"modules": {"decision": "greedy"}, "greedy": {"min_idle": 0.6}}
#include <algorithm>
#include <cstdint>

#include <malleo/config_table.h>
#include <malleo/decision_module.h>

namespace {

int64_t activeProcesses(const malleo::ApplicationInfo &app)
{
	return std::count_if(app.local.begin(), app.local.end(),
			     [](const malleo::ProcessInfo &p) { return p.active; });
}

class GreedyDecision : public malleo::DecisionModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		// Read into copies so that a bad table leaves the module as it was.
		double minIdle = minIdle_;
		int64_t maxGive = maxGive_;
		malleo::ConfigTable t(table, "greedy");
		t.number("min_idle", minIdle, 0, 1);
		t.integer("max_give", maxGive, 1, 1024);
		t.finish();
		if (!t.error().empty())
			return t.error();
		minIdle_ = minIdle;
		maxGive_ = maxGive;
		return {};
	}

	malleo::WorkVerdict onWorkRequest(const malleo::DecisionView &view,
					  const malleo::WorkRequest &request) override
	{
		double localApw = view.overlay.local ? view.overlay.local->apw : 1.0;
		double originApw = request.originProfile.apw;

		malleo::WorkVerdict v;
		v.reasons = {{"module", "greedy"},	{"origin", request.origin},
			     {"origin_apw", originApw}, {"local_apw", localApw},
			     {"min_idle", minIdle_},	{"max_give", maxGive_}};
		if (originApw < minIdle_) {
			v.reasons["why"] = "the origin is not idle enough";
			return v;
		}
		// Work moves towards idleness: an origin no idler than this node
		// would hand the processes straight back.
		if (originApw <= localApw) {
			v.reasons["why"] = "this node is at least as idle as the origin";
			return v;
		}

		const malleo::ApplicationInfo *largest = nullptr;
		for (const malleo::ApplicationInfo &app : view.apps)
			if (app.malleable && activeProcesses(app) >= 2 &&
			    (!largest || activeProcesses(app) > activeProcesses(*largest)))
				largest = &app;
		if (!largest) {
			v.reasons["why"] =
			    "no malleable application with two active processes here";
			return v;
		}

		int64_t active = activeProcesses(*largest);
		int64_t give = std::min(active / 2, maxGive_);
		v.answer = true;
		v.reasons["app"] = largest->id;
		v.reasons["active"] = active;
		v.reasons["give"] = give;
		v.actions.push_back(
		    {"transfer",
		     largest->id,
		     {{"app", largest->id}, {"processes", give}, {"target", request.origin}},
		     v.reasons});
		return v;
	}

	// Greedy only reacts to requests: nothing to do on its own.
	std::vector<malleo::Action> onTick(const malleo::DecisionView &) override { return {}; }

private:
	double minIdle_ = 0.5;
	int64_t maxGive_ = 4;
};

} // namespace

MALLEO_MODULE(malleo::ModuleKind::Decision, "greedy", "1.0", GreedyDecision)
