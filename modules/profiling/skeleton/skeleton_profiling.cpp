// SPDX-License-Identifier: Apache-2.0
// Profiling module "skeleton": the smallest complete profiling module, to copy
// when writing your own. Built as a shared object, it is found by the agent as
// malleo-profiling-skeleton.so on the module path and loaded by
// {"modules": {"profiling": "skeleton"}}.
//
// A profiling module is the one kind allowed to look at the machine; this one
// only reports a node of `cores` idle cores of speed 1.0.
//
// Options (table "skeleton"):
//   cores  1  CPUs of the node
#include <malleo/config_table.h>
#include <malleo/profiling_module.h>

namespace {

class SkeletonProfiling : public malleo::ProfilingModule
{
public:
	std::string configure(const nlohmann::json &table) override
	{
		malleo::ConfigTable t(table, "skeleton");
		t.integer("cores", cores_, 1, 1 << 20);
		t.finish();
		return t.error();
	}

	std::string start() override { return {}; }

	malleo::NodeProfile sample(double) override
	{
		malleo::NodeProfile p;
		p.pw = cores_;
		p.apw = 1.0;
		p.upw = 0.0;
		p.cores = cores_;
		return p;
	}

	nlohmann::json describe() const override
	{
		return {{"module", "skeleton"}, {"cores", cores_}};
	}

private:
	int cores_ = 1;
};

} // namespace

MALLEO_MODULE(malleo::ModuleKind::Profiling, "skeleton", "1.0", SkeletonProfiling)
