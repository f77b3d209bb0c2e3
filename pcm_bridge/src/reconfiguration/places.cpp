// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/places.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sched.h>

#include "reconfiguration/tags.h"

namespace malleo::pcm {

std::string currentNode()
{
	if (const char *node = std::getenv("MALLEO_NODE"); node && *node)
		return node;
	char name[MPI_MAX_PROCESSOR_NAME] = {};
	int length = 0;
	MPI_Get_processor_name(name, &length);
	return std::string(name, static_cast<std::size_t>(length));
}

Places gatherPlaces(MPI_Comm control, const ThreadAddress &self)
{
	struct Place {
		char node[kNodeNameBytes];
		std::int64_t host, pid, tid;
	};
	Place mine{};
	std::strncpy(mine.node, currentNode().c_str(), kNodeNameBytes - 1);
	mine.host = self.host;
	mine.pid = self.pid;
	mine.tid = self.tid;
	int size = 0;
	MPI_Comm_size(control, &size);
	std::vector<Place> all(static_cast<std::size_t>(size));
	MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, control);
	Places places;
	for (const Place &place : all) {
		places.nodes.emplace_back(place.node);
		places.threads.push_back({place.host, place.pid, place.tid});
	}
	return places;
}

void bindToNode(const NodeMap &nodes, int world_rank)
{
	const auto found = nodes.nodes.find(currentNode());
	if (found == nodes.nodes.end() || found->second.cpus.empty())
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int cpu : found->second.cpus)
		if (cpu < CPU_SETSIZE)
			CPU_SET(cpu, &set);
	bool bound = true;
	if (DIR *tasks = opendir("/proc/self/task")) {
		while (const dirent *entry = readdir(tasks)) {
			if (entry->d_name[0] == '.')
				continue;
			if (sched_setaffinity(static_cast<pid_t>(std::atoi(entry->d_name)), sizeof set, &set) != 0)
				bound = false;
		}
		closedir(tasks);
	} else {
		bound = sched_setaffinity(0, sizeof set, &set) == 0;
	}
	if (!bound)
		std::fprintf(stderr, "malleo-pcm: could not bind world rank %d to node %s's CPUs %s\n", world_rank,
			     found->first.c_str(), cpuListText(found->second.cpus).c_str());
}

} // namespace malleo::pcm
