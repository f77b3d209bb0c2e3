// SPDX-License-Identifier: Apache-2.0
// The module ABI: one POD descriptor and one factory per module.
//
// A module is a profiling, protocol or decision plug-in. Built-in modules register
// themselves when the agent starts; external ones are shared objects exporting
// exactly two symbols, `malleo_module_info` and `malleo_module_create`, both made
// by MALLEO_MODULE(). The host checks the descriptor (ABI major equal, minor not
// newer than the host's, kind and name as expected) before calling the factory.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

// Major: an incompatible change to any module interface. Minor: methods added at
// the end of an interface; the host checks the minor before calling them.
#define MALLEO_MODULE_ABI_MAJOR 1
#define MALLEO_MODULE_ABI_MINOR 3

#define MALLEO_EXPORT __attribute__((visibility("default")))

namespace malleo {

enum class ModuleKind : uint32_t {
	Profiling = 1,
	Protocol = 2,
	Decision = 3,
};

const char *moduleKindName(ModuleKind kind);

// Kept plain old data: nothing of the C++ library crosses the descriptor, so the
// host can read it from any module before trusting the module's code.
struct ModuleInfo {
	uint32_t abiMajor;
	uint32_t abiMinor;
	ModuleKind kind;
	char name[32];
	char version[16];
	uint32_t reserved[8];
};

// Every module interface derives from Module. Modules do no I/O of their own:
// the agent core calls them with a view and gets answers back, so the same
// module runs in the daemon, in unit tests and in the simulator.
class Module
{
public:
	virtual ~Module() = default;

	// Reads this module's table of the configuration (the object under the
	// module's name, or an empty object). Unknown keys are errors. Returns an
	// empty string on success, otherwise one line naming the key and the problem.
	virtual std::string configure(const nlohmann::json &table) = 0;
};

using ModuleFactory = Module *(*)();

// Built-in modules call this through MALLEO_MODULE (see below).
void registerBuiltinModule(const ModuleInfo &info, ModuleFactory factory);

struct BuiltinModuleRegistrar {
	BuiltinModuleRegistrar(const ModuleInfo &info, ModuleFactory factory)
	{
		registerBuiltinModule(info, factory);
	}
};

} // namespace malleo

// Compiled into a shared object (MALLEO_MODULE_DSO defined), the macro exports the
// descriptor and the factory; compiled into the agent, it registers a built-in.
#ifdef MALLEO_MODULE_DSO
#define MALLEO_MODULE(KIND, NAME, VERSION, CLASS)                               \
	extern "C" MALLEO_EXPORT const malleo::ModuleInfo malleo_module_info = { \
		MALLEO_MODULE_ABI_MAJOR, MALLEO_MODULE_ABI_MINOR, KIND, NAME,    \
		VERSION, {}};                                                    \
	extern "C" MALLEO_EXPORT malleo::Module *malleo_module_create()          \
	{                                                                        \
		return new CLASS();                                              \
	}
#else
#define MALLEO_MODULE(KIND, NAME, VERSION, CLASS)                               \
	namespace {                                                              \
	const malleo::ModuleInfo moduleInfo_ = {MALLEO_MODULE_ABI_MAJOR,         \
		MALLEO_MODULE_ABI_MINOR, KIND, NAME, VERSION, {}};               \
	const malleo::BuiltinModuleRegistrar registrar_(                         \
		moduleInfo_, []() -> malleo::Module * { return new CLASS(); });  \
	}
#endif
