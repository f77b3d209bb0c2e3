// SPDX-License-Identifier: Apache-2.0
#include "topology.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <hwloc.h>

namespace malleo {

namespace {

struct TopologyDeleter {
	void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct BitmapDeleter {
	void operator()(hwloc_bitmap_t b) const { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

std::string versionText(unsigned v)
{
	return fmt::format("{}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff);
}

int count(hwloc_topology_t t, hwloc_obj_type_t type)
{
	int n = hwloc_get_nbobjs_by_type(t, type);
	return n < 0 ? 0 : n; // -1 means "at several depths", which these types never are
}

// Objects of `type` that hold at least one CPU of `set`: a virtual node pinned
// to two PUs of one core uses one core, not two.
int countTouched(hwloc_topology_t t, hwloc_obj_type_t type, hwloc_const_bitmap_t set)
{
	int n = 0;
	for (int i = 0; i < count(t, type); ++i) {
		hwloc_obj_t obj = hwloc_get_obj_by_type(t, type, static_cast<unsigned>(i));
		if (obj && obj->cpuset && hwloc_bitmap_intersects(obj->cpuset, set))
			++n;
	}
	return n;
}

nlohmann::json cache(hwloc_topology_t t, hwloc_obj_type_t type)
{
	int n = count(t, type);
	hwloc_obj_t first = n > 0 ? hwloc_get_obj_by_type(t, type, 0) : nullptr;
	nlohmann::json size = nullptr;
	if (first && first->attr)
		size = first->attr->cache.size;
	return {{"count", n}, {"size_bytes", size}};
}

} // namespace

std::string checkHwlocVersion(unsigned runtime)
{
	if ((runtime >> 16) != (HWLOC_API_VERSION >> 16))
		return fmt::format(
		    "hwloc library API {} does not match the {} this agent was built with",
		    versionText(runtime), versionText(HWLOC_API_VERSION));
	return {};
}

std::string describeTopology(const std::string &xmlPath, const std::vector<int> &cpus,
			     nlohmann::json &out)
{
	unsigned runtime = hwloc_get_api_version();
	if (std::string err = checkHwlocVersion(runtime); !err.empty())
		return err;

	hwloc_topology_t raw = nullptr;
	if (hwloc_topology_init(&raw) < 0)
		return fmt::format("hwloc: cannot initialise a topology: {}", std::strerror(errno));
	Topology topology(raw);
	if (!xmlPath.empty() && hwloc_topology_set_xml(raw, xmlPath.c_str()) < 0)
		return fmt::format("hwloc: cannot read topology XML '{}': {}", xmlPath,
				   std::strerror(errno));
	if (hwloc_topology_load(raw) < 0)
		return xmlPath.empty()
			   ? fmt::format("hwloc: cannot load this machine's topology: {}",
					 std::strerror(errno))
			   : fmt::format("hwloc: topology XML '{}' is not valid: {}", xmlPath,
					 std::strerror(errno));

	Bitmap set(hwloc_bitmap_alloc());
	if (!set)
		return "hwloc: out of memory";
	nlohmann::json missing = nlohmann::json::array();
	int pus = 0;
	for (int cpu : cpus) {
		if (cpu < 0 || !hwloc_get_pu_obj_by_os_index(raw, static_cast<unsigned>(cpu))) {
			missing.push_back(cpu);
			continue;
		}
		hwloc_bitmap_set(set.get(), static_cast<unsigned>(cpu));
		++pus;
	}

	out = {
	    {"source", xmlPath.empty() ? std::string("machine") : "xml:" + xmlPath},
	    {"hwloc_api", versionText(runtime)},
	    {"packages", count(raw, HWLOC_OBJ_PACKAGE)},
	    {"cores", count(raw, HWLOC_OBJ_CORE)},
	    {"pus", count(raw, HWLOC_OBJ_PU)},
	    {"numa_nodes", count(raw, HWLOC_OBJ_NUMANODE)},
	    {"caches",
	     {{"l1d", cache(raw, HWLOC_OBJ_L1CACHE)},
	      {"l2", cache(raw, HWLOC_OBJ_L2CACHE)},
	      {"l3", cache(raw, HWLOC_OBJ_L3CACHE)}}},
	    {"cpuset",
	     {{"pus", pus},
	      {"cores", countTouched(raw, HWLOC_OBJ_CORE, set.get())},
	      {"packages", countTouched(raw, HWLOC_OBJ_PACKAGE, set.get())},
	      {"numa_nodes", countTouched(raw, HWLOC_OBJ_NUMANODE, set.get())},
	      {"not_in_topology", missing}}},
	};
	return {};
}

} // namespace malleo
