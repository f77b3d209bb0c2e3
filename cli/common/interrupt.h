// SPDX-License-Identifier: Apache-2.0
// Ctrl-C (and SIGTERM) end the commands that follow agents until stopped;
// the handler only sets a flag so that they finish their output and clean up.
#pragma once

namespace malleo::cli {

void catchInterrupts();
bool interrupted();

} // namespace malleo::cli
