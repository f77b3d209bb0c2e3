// SPDX-License-Identifier: Apache-2.0
// What an application asks of a node's CPU, measured from its own processes (ProcessInfo::ownLoad), beside what the
// node's load says. Eq. 1-12 of seed 001 take the node's used CPU (UPW) as the application's demand, true for a
// CPU-bound application that fills its cores; one that waits (paced, on I/O, on the network) makes UPW small, ρ near 1
// and a split into dozens of processes that gain nothing (DESIGN.md, "What the paper assumes, made explicit").
#pragma once

#include <cstdint>

#include <malleo/application.h>
#include <malleo/profile.h>

namespace malleo::ios {

struct AppDemand {
	bool measured = false;	   // its processes said what CPU they use; if not, the paper's figures stand
	double usedCores = 0.0;	   // D: the node's cores its active processes here use
	double reachCores = 0.0;   // C: the cores they could use: one each at most, with the node's free cores
	double computeShare = 1.0; // D / C: the share of an iteration that more CPU would shorten
	double fraction = 0.0;	   // the node's power the application has here, as eq. 1-12's UPW_j: UPW_j, or C / cores
				   // where its processes could use more than the node uses
};

AppDemand appDemand(const ApplicationInfo &app, const NodeProfile &here);

// The processes a split may put on the asking node: its free power in cores of the holding node's speed, at least 1.
int64_t remoteCapacity(const NodeProfile &origin, const NodeProfile &here);

} // namespace malleo::ios
