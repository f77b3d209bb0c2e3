// SPDX-License-Identifier: Apache-2.0
#include "failure.h"

#include <iostream>

namespace malleo::cli {

int report(const Failure &failure)
{
	std::cerr << "malleo: " << failure.line << '\n';
	return failure.status;
}

} // namespace malleo::cli
