// SPDX-License-Identifier: Apache-2.0
// What the bridge knows of the nodes a spawned process may be placed on (MALLEO_NODES, MALLEO_NODE_AGENTS,
// MALLEO_CLUSTER_DIR): on one machine a node is a virtual node of `malleo cluster up`, some CPUs and an agent, so a
// process started for node n must run on n's CPUs and report to n's agent. Pure, so the grammar is tested alone.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace malleo::pcm {

struct NodeInfo {
	std::vector<int> cpus;  // empty: not bound
	std::string agent;      // empty: the process keeps the MALLEO_AGENT it inherits
	std::string host;       // the host its processes start on (`malleo cluster up --hosts`); empty: the MPI's choice
};

struct NodeMap {
	std::map<std::string, NodeInfo> nodes;
	bool described = false;  // some node is named: spawning on a node not named is refused
	std::string clusterDir;  // MALLEO_CLUSTER_DIR: its cluster.json names nodes that joined after the launch
	std::vector<std::string> launchHosts;  // MALLEO_HOSTS: the hosts of the launch's hostfile, the only ones a spawn
					       // can reach (empty: not said)
};

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Returns an empty string or one line saying what is wrong.
std::string parseCpuList(const std::string &text, std::vector<int> &out);

// {0,1,2,3,8,10,11} -> "0,1,2,3,8,10,11", for messages.
std::string cpuListText(const std::vector<int> &cpus);

// nodes:  "n1=0;n2=1-3"                 (MALLEO_NODES: node name = CPU list, ';' between nodes)
// agents: "n1=ipc:///x/n1/agent.sock"   (MALLEO_NODE_AGENTS: node name = endpoint, ';' between nodes)
// cluster_dir: a `malleo cluster up` directory: a node without an agent entry reports to
// ipc://<cluster_dir>/<name>/agent.sock (the node's run directory). Any of the three may be empty.
std::string parseNodeMap(const std::string &nodes, const std::string &agents, const std::string &cluster_dir,
			 NodeMap &out);

// hosts: "n1=mh12ab34-n1;n2=mh12ab34-n2" (MALLEO_NODE_HOSTS: node name = host name, ';' between nodes), the host
// a spawn onto the node names in its MPI_Info. Nodes named here and nowhere else are described by their host alone.
// launch_hosts: "h1,h2" (MALLEO_HOSTS), into map.launchHosts.
std::string parseNodeHosts(const std::string &hosts, const std::string &launch_hosts, NodeMap &map);

// A node that joined the virtual cluster after the launch (`malleo cluster add`) is in its cluster.json but not in
// the MALLEO_NODES the launch gave. Adds each node of cluster_json (that file's text) that the map does not name,
// with its "cpus", its "host" and its agent at ipc://<clusterDir>/<name>/agent.sock; a node the map names stays as
// it is, except that it takes the file's host when it has none. Only
// for a map that describes nodes: a process launched outside the cluster is not placed on it. Returns an empty
// string or one line saying what is wrong with the text (the map is then unchanged).
std::string addClusterNodes(const std::string &cluster_json, NodeMap &map);

// addClusterNodes() with <map.clusterDir>/cluster.json; no directory or no file adds nothing.
std::string addClusterFileNodes(NodeMap &map);

} // namespace malleo::pcm
