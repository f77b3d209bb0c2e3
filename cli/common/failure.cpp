// SPDX-License-Identifier: Apache-2.0
#include "failure.h"

#include <iostream>

#include "reply_fields.h"

namespace malleo::cli {

int report(const Failure &failure)
{
	// A failure may quote an agent's error text, itself quoting a peer.
	std::cerr << "malleo: " << shownText(failure.line) << '\n';
	return failure.status;
}

} // namespace malleo::cli
