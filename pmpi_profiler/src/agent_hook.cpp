// SPDX-License-Identifier: Apache-2.0
#include "agent_hook.h"

namespace malleo::pmpi {

void agentIterationDelta()
{
}

void agentFinalDelta()
{
}

} // namespace malleo::pmpi
