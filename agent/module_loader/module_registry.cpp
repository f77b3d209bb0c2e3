// SPDX-License-Identifier: Apache-2.0
#include "module_registry.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <utility>

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace malleo {

namespace {

struct Builtin {
	ModuleInfo info;
	ModuleFactory factory;
};

std::vector<Builtin> &builtins()
{
	static std::vector<Builtin> table;
	return table;
}

std::string infoName(const ModuleInfo &info)
{
	return std::string(info.name, strnlen(info.name, sizeof(info.name)));
}

} // namespace

const char *moduleKindName(ModuleKind kind)
{
	switch (kind) {
	case ModuleKind::Profiling:
		return "profiling";
	case ModuleKind::Protocol:
		return "protocol";
	case ModuleKind::Decision:
		return "decision";
	}
	return "unknown";
}

void registerBuiltinModule(const ModuleInfo &info, ModuleFactory factory)
{
	builtins().push_back({info, factory});
}

std::vector<std::string> builtinModuleNames(ModuleKind kind)
{
	std::vector<std::string> names;
	for (const Builtin &b : builtins())
		if (b.info.kind == kind)
			names.push_back(infoName(b.info));
	return names;
}

ModuleHandle::ModuleHandle(Module *module, void *library, ModuleInfo info, std::string source)
	: module_(module), library_(library), info_(info), source_(std::move(source))
{
}

ModuleHandle::ModuleHandle(ModuleHandle &&other) noexcept
{
	*this = std::move(other);
}

ModuleHandle &ModuleHandle::operator=(ModuleHandle &&other) noexcept
{
	if (this != &other) {
		reset();
		module_ = std::exchange(other.module_, nullptr);
		library_ = std::exchange(other.library_, nullptr);
		info_ = other.info_;
		source_ = std::move(other.source_);
	}
	return *this;
}

ModuleHandle::~ModuleHandle()
{
	reset();
}

void ModuleHandle::reset()
{
	delete module_;
	module_ = nullptr;
	if (library_)
		dlclose(library_);
	library_ = nullptr;
}

std::string checkModuleInfo(const ModuleInfo &info, ModuleKind kind, const std::string &name)
{
	if (info.abiMajor != MALLEO_MODULE_ABI_MAJOR)
		return fmt::format("module ABI {}.{} is incompatible with the agent's {}.{}",
				   info.abiMajor, info.abiMinor, MALLEO_MODULE_ABI_MAJOR,
				   MALLEO_MODULE_ABI_MINOR);
	if (info.abiMinor > MALLEO_MODULE_ABI_MINOR)
		return fmt::format("module ABI {}.{} is newer than the agent's {}.{}", info.abiMajor,
				   info.abiMinor, MALLEO_MODULE_ABI_MAJOR, MALLEO_MODULE_ABI_MINOR);
	if (info.kind != kind)
		return fmt::format("module is of kind '{}', expected '{}'", moduleKindName(info.kind),
				   moduleKindName(kind));
	if (strnlen(info.name, sizeof(info.name)) == sizeof(info.name))
		return "module name is not terminated";
	if (infoName(info) != name)
		return fmt::format("module calls itself '{}', expected '{}'", infoName(info), name);
	return {};
}

ModuleLoadResult loadModule(ModuleKind kind, const std::string &name,
			    const std::vector<std::string> &path)
{
	for (const Builtin &b : builtins())
		if (b.info.kind == kind && infoName(b.info) == name)
			return {ModuleHandle(b.factory(), nullptr, b.info, "built-in"), {}};

	std::string file = fmt::format("malleo-{}-{}.so", moduleKindName(kind), name);
	for (const std::string &dir : path) {
		std::filesystem::path candidate = std::filesystem::path(dir) / file;
		std::error_code ec;
		if (!std::filesystem::exists(candidate, ec))
			continue;

		void *library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
		if (!library)
			return {{}, fmt::format("{} module '{}': cannot load {}: {}",
						moduleKindName(kind), name, candidate.string(), dlerror())};
		auto *info = static_cast<const ModuleInfo *>(dlsym(library, "malleo_module_info"));
		auto factory = reinterpret_cast<ModuleFactory>(dlsym(library, "malleo_module_create"));
		std::string problem;
		if (!info || !factory)
			problem = "it exports no malleo_module_info or malleo_module_create";
		else
			problem = checkModuleInfo(*info, kind, name);
		if (!problem.empty()) {
			dlclose(library);
			return {{}, fmt::format("{} module '{}' refused ({}): {}", moduleKindName(kind),
						name, candidate.string(), problem)};
		}
		Module *module = factory();
		if (!module) {
			dlclose(library);
			return {{}, fmt::format("{} module '{}' ({}): its factory returned nothing",
						moduleKindName(kind), name, candidate.string())};
		}
		return {ModuleHandle(module, library, *info, candidate.string()), {}};
	}

	std::string known;
	for (const std::string &n : builtinModuleNames(kind))
		known += (known.empty() ? "" : ", ") + n;
	return {{}, fmt::format("{} module '{}' not found (built-in: {}; searched {} for {})",
				moduleKindName(kind), name, known,
				path.empty() ? std::string("no module path") : fmt::format("{}", fmt::join(path, ":")),
				file)};
}

} // namespace malleo
