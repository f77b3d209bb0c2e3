// SPDX-License-Identifier: Apache-2.0
// A decision module built for an ABI the agent does not have: the agent must
// refuse it before calling any of its code.
#include <cstdlib>

#include <malleo/decision_module.h>

extern "C" MALLEO_EXPORT const malleo::ModuleInfo malleo_module_info = {
	99, 0, malleo::ModuleKind::Decision, "badabi", "1.0", {}};

extern "C" MALLEO_EXPORT malleo::Module *malleo_module_create()
{
	std::abort(); // never reached: the descriptor is checked first
}
