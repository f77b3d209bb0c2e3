// SPDX-License-Identifier: Apache-2.0
// <cluster-dir>/cluster.json: the nodes of a virtual cluster on this machine,
// written by `malleo cluster up` and read by every command given --node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "failure.h"

namespace malleo::cli {

struct ClusterNode {
	std::string name;
	long pid = 0;
	unsigned long long startTime = 0; // /proc/<pid>/stat field 22: tells a reused pid apart
	std::vector<int> cpus;
	std::string runDir;
	std::string endpoint; // peer inbox, tcp://127.0.0.1:PORT
	std::string local;    // local endpoint, ipc://<run-dir>/agent.sock
	std::string host;     // `cluster up --hosts`: its network namespace and hostname (netns_hosts.h); else empty
	std::string address;  // and its address there
};

struct ClusterFile {
	std::vector<ClusterNode> nodes;

	const ClusterNode *find(const std::string &name) const;
	std::string names() const; // "n1, n2, n3" for messages
};

std::string clusterFilePath(const std::string &dir);

// K of a node named nK by `cluster up` and `cluster add`; nullopt for any other name.
std::optional<unsigned> nodeIndex(const std::string &name);

// The node's local endpoint; before the agent has said it (a node still
// starting), where the agent will bind it: ipc://<run-dir>/agent.sock.
std::string localEndpoint(const ClusterNode &node);

// The cluster in dir; nullopt with an empty failure line when there is none.
std::optional<ClusterFile> readClusterFile(const std::string &dir, Failure &failure);

// Replaces cluster.json atomically (write then rename).
std::optional<Failure> writeClusterFile(const std::string &dir, const ClusterFile &cluster);

// A word as a shell reads it back, quoted only when it has to be: the cluster directory in the next commands that
// `cluster up` and `cluster add` print.
std::string shellWord(const std::string &word);

nlohmann::json toJson(const ClusterNode &node);
nlohmann::json toJson(const ClusterFile &cluster);

} // namespace malleo::cli
