// SPDX-License-Identifier: Apache-2.0
// Profiling module "static": a node described by its configuration.
#pragma once

#include <optional>

#include <malleo/profiling_module.h>

#include "static_config.h"

namespace malleo {

class StaticProfiling : public ProfilingModule
{
public:
	std::string configure(const nlohmann::json &table) override;
	std::string start() override;
	NodeProfile sample(double now) override;
	nlohmann::json describe() const override;

private:
	StaticConfig config_;
	std::optional<double> firstSample_; // schedule times count from here
};

} // namespace malleo
