// SPDX-License-Identifier: Apache-2.0
// One registry for built-in and shared-object modules.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <malleo/module.h>

namespace malleo {

// A created module and, for a shared object, the library that holds its code:
// the module is destroyed before the library is closed.
class ModuleHandle
{
public:
	ModuleHandle() = default;
	ModuleHandle(Module *module, void *library, ModuleInfo info, std::string source);
	ModuleHandle(ModuleHandle &&other) noexcept;
	ModuleHandle &operator=(ModuleHandle &&other) noexcept;
	~ModuleHandle();

	Module *get() const { return module_; }
	const ModuleInfo &info() const { return info_; }
	const std::string &source() const { return source_; } // "built-in" or a path

private:
	void reset();

	Module *module_ = nullptr;
	void *library_ = nullptr;
	ModuleInfo info_{};
	std::string source_;
};

struct ModuleLoadResult {
	ModuleHandle handle;
	std::string error; // empty on success
};

// Creates the module `name` of `kind`: a built-in if one has that name, else
// `malleo-<kind>-<name>.so` from the first directory of `path` that has it,
// checked before use (ABI major equal, minor not newer, kind and name matching).
ModuleLoadResult loadModule(ModuleKind kind, const std::string &name,
			    const std::vector<std::string> &path);

// Checks a shared object's descriptor against what the host expects.
std::string checkModuleInfo(const ModuleInfo &info, ModuleKind kind, const std::string &name);

// Names of the built-in modules of a kind, for --help and errors.
std::vector<std::string> builtinModuleNames(ModuleKind kind);

} // namespace malleo
