// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the agent's configuration. The input is the configuration file's text; parsing and checking it
// must end in a configuration or one error line, never a crash or an exception.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false, true);
	if (doc.is_discarded())
		return 0;
	malleo::AgentConfig config;
	const std::string error = malleo::parseConfig(doc, config, {"static", "host", "p2p", "loaddiff", "ios"});
	if (error.find('\n') != std::string::npos)
		__builtin_trap(); // one line, always
	if (error.empty())
		(void)malleo::appListenEndpoint(config);
	return 0;
}
