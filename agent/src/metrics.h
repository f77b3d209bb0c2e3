// SPDX-License-Identifier: Apache-2.0
// The agent's state in Prometheus' text exposition format (version 0.0.4), served by the daemon on /metrics when
// `agent.metrics_listen` names an address. Pure: built from the core's `status`, `peers` and `apps` replies, so the
// metrics say exactly what `malleo status`, `peers` and `apps` say. docs/deployment.md lists every metric.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace malleo {

class Core;

// The text of one scrape, from the three replies' documents.
std::string prometheusText(const nlohmann::json &status, const nlohmann::json &peers, const nlohmann::json &apps);

// The same, from the core's state at `now`.
std::string prometheusText(const Core &core, double now);

// The metric families prometheusText can write, by name (for the test that checks the documentation lists them).
std::vector<std::string_view> metricFamilies();

} // namespace malleo
