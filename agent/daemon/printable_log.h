// SPDX-License-Identifier: Apache-2.0
// The agent's logger, whose every line is made inert before it is written: a log line may quote what a peer or a
// client sent (an endpoint, a version, an error's text), which must neither drive the terminal that shows the log nor
// forge a line of its own (a newline in it is written \x0a).
#pragma once

#include <memory>
#include <string>

#include <spdlog/logger.h>

namespace malleo {

// Makes and registers the logger `name`, writing to standard error in colour, each line through printableText.
std::shared_ptr<spdlog::logger> makePrintableLogger(const std::string &name);

} // namespace malleo
