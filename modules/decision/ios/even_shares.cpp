// SPDX-License-Identifier: Apache-2.0
#include "even_shares.h"

#include <algorithm>
#include <limits>

namespace malleo::ios {

namespace {

double gainOf(double before, double after)
{
	return before > 0.0 ? (before - after) / before : 0.0;
}

// Seconds of the slowest of `processes` (from `from` on) at `speed` per process.
double slowest(const std::vector<EvenProcess> &processes, size_t from, double speed)
{
	double t = 0.0;
	for (size_t k = from; k < processes.size(); ++k)
		t = std::max(t, static_cast<double>(processes[k].units) / speed);
	return t;
}

// Speed of each of m processes placed on i's free cores.
double requesterSpeed(const EvenNode &i, int64_t m)
{
	if (m < 1)
		return i.coreSpeed;
	return i.coreSpeed * std::min(1.0, i.freeCores / static_cast<double>(m));
}

} // namespace

double shareNow(const EvenNode &j, const std::vector<EvenProcess> &processes)
{
	double measured = std::numeric_limits<double>::infinity();
	for (const EvenProcess &p : processes)
		if (p.cores > 0.0)
			measured = std::min(measured, p.cores);
	if (measured <= 1.0)
		return measured;
	const double k = static_cast<double>(std::max<size_t>(processes.size(), 1));
	return std::min(1.0, static_cast<double>(j.cores) / k);
}

EvenPrediction evenSplit(const EvenNode &j, const std::vector<EvenProcess> &processes, const EvenNode &i,
			 int64_t totalProcesses, int64_t r)
{
	EvenPrediction p;
	if (processes.empty() || r < 1)
		return p;
	const double speedJ = j.coreSpeed * shareNow(j, processes);
	p.before = slowest(processes, 0, speedJ);
	double mean = 0.0;
	for (const EvenProcess &q : processes)
		mean += static_cast<double>(q.units);
	mean /= static_cast<double>(processes.size());
	const double P = static_cast<double>(std::max<int64_t>(totalProcesses, static_cast<int64_t>(processes.size())));
	const double shrink = P / (P + static_cast<double>(r));
	p.after = shrink * std::max(p.before, mean / requesterSpeed(i, r));
	p.gain = gainOf(p.before, p.after);
	return p;
}

EvenPrediction evenTransfer(const EvenNode &j, const std::vector<EvenProcess> &processes, const EvenNode &i,
			    int64_t m)
{
	EvenPrediction p;
	const auto k = static_cast<int64_t>(processes.size());
	if (k == 0 || m < 1 || m > k)
		return p;
	const double share = shareNow(j, processes);
	p.before = slowest(processes, 0, j.coreSpeed * share);
	// Those that stay get the cores the leavers used, up to a core each.
	const double shareAfter = m < k ? std::min(1.0, share * static_cast<double>(k) / static_cast<double>(k - m))
					: 1.0;
	double moved = 0.0;
	for (int64_t q = 0; q < m; ++q)
		moved = std::max(moved, static_cast<double>(processes[static_cast<size_t>(q)].units));
	p.after = std::max(slowest(processes, static_cast<size_t>(m), j.coreSpeed * shareAfter),
			   moved / requesterSpeed(i, m));
	p.gain = gainOf(p.before, p.after);
	return p;
}

} // namespace malleo::ios
