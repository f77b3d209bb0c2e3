// SPDX-License-Identifier: Apache-2.0
// One request to one agent whose reply carries a list (`peers`, `apps`).
#pragma once

#include <optional>
#include <string>

#include <malleo/message.h>

#include "failure.h"
#include "global_options.h"

namespace malleo::cli {

struct ListReply {
	Message reply;
	nlohmann::json list; // the reply's list field, sorted by its `key`
};

// Asks the agent chosen by the global options for `type`; the reply must be
// `type`_reply with an array under `field`.
std::optional<ListReply> requestList(const GlobalOptions &options, const std::string &type,
				     const std::string &field, const std::string &key,
				     Failure &failure);

} // namespace malleo::cli
