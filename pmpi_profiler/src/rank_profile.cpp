// SPDX-License-Identifier: Apache-2.0
#include "rank_profile.h"

#include <unistd.h>

#include "clock.h"
#include "iterations.h"
#include "process_state.h"

namespace malleo::pmpi {

namespace {

constexpr uint64_t kPackVersion = 2;
constexpr size_t kPackHeader = 9;

} // namespace

uint64_t RankProfile::initNs() const
{
	return fnNs[kFn_MPI_Init] + fnNs[kFn_MPI_Init_thread];
}

RankProfile RankProfile::collect()
{
	RankProfile p;
	const double nsPer = nsPerTick();
	p.rank = worldRank();
	char host[256] = {};
	gethostname(host, sizeof(host) - 1);
	p.host = host;
	p.pid = uint64_t(getpid());
	const uint64_t now = ticks();
	p.wallNs = uint64_t(double(now - startTicks()) * nsPer);
	if (initReturnedTicks() && now > initReturnedTicks())
		p.appNs = uint64_t(double(now - initReturnedTicks()) * nsPer);
	const int peers = perPeer() ? worldSize() + 1 : 0;
	p.peerMessages.assign(size_t(peers), 0);
	p.peerBytes.assign(size_t(peers), 0);
	uint64_t mpiTicks = 0;
	for (ThreadCounters *ts = firstThread(); ts; ts = ts->next) {
		++p.threads;
		for (int f = 0; f < kFunctionCount; ++f) {
			p.fnCalls[f] += ts->fn[f].calls.get();
			p.fnNs[f] += estimatedTicks(ts->fn[f]);
			p.fnBytes[f] += ts->fn[f].bytes.get();
		}
		for (int k = 0; k < kOpKinds; ++k)
			for (int b = 0; b < kHistogramBins; ++b)
				p.histogram[k][b] += ts->histogram[k][b].get();
		const PeerCounters *pc = ts->peers.load(std::memory_order_acquire);
		for (int i = 0; pc && i < peers; ++i) {
			p.peerMessages[size_t(i)] += pc[i].messages.get();
			p.peerBytes[size_t(i)] += pc[i].bytes.get();
		}
	}
	for (int f = 0; f < kFunctionCount; ++f) {
		mpiTicks += p.fnNs[f];
		p.fnNs[f] = uint64_t(double(p.fnNs[f]) * nsPer);
	}
	p.mpiNs = uint64_t(double(mpiTicks) * nsPer);

	for (const IterationSpan &it : recordedIterations()) {
		p.iterationNs.push_back(uint64_t(double(it.end.ticks - it.start.ticks) * nsPer));
		p.iterationMpiNs.push_back(
		    uint64_t(double(it.end.mpiTicks - it.start.mpiTicks) * nsPer));
	}
	return p;
}

std::vector<uint64_t> RankProfile::pack() const
{
	std::vector<uint64_t> out{
	    kPackVersion,	 uint64_t(rank),    pid, threads, wallNs, mpiNs, appNs,
	    peerMessages.size(), iterationNs.size()};
	out.insert(out.end(), fnCalls, fnCalls + kFunctionCount);
	out.insert(out.end(), fnNs, fnNs + kFunctionCount);
	out.insert(out.end(), fnBytes, fnBytes + kFunctionCount);
	out.insert(out.end(), &histogram[0][0], &histogram[0][0] + kOpKinds * kHistogramBins);
	out.insert(out.end(), peerMessages.begin(), peerMessages.end());
	out.insert(out.end(), peerBytes.begin(), peerBytes.end());
	out.insert(out.end(), iterationNs.begin(), iterationNs.end());
	out.insert(out.end(), iterationMpiNs.begin(), iterationMpiNs.end());
	return out;
}

RankProfile RankProfile::unpack(const uint64_t *data, size_t size)
{
	RankProfile p;
	if (size < kPackHeader || data[0] != kPackVersion)
		return p;
	p.rank = int(data[1]);
	p.pid = data[2];
	p.threads = data[3];
	p.wallNs = data[4];
	p.mpiNs = data[5];
	p.appNs = data[6];
	const size_t peers = data[7], iterations = data[8];
	if (size != kPackHeader + 3 * kFunctionCount + kOpKinds * kHistogramBins + 2 * peers +
			2 * iterations)
		return p;
	const uint64_t *d = data + kPackHeader;
	auto take = [&d](uint64_t *to, size_t n) {
		std::copy(d, d + n, to);
		d += n;
	};
	take(p.fnCalls, kFunctionCount);
	take(p.fnNs, kFunctionCount);
	take(p.fnBytes, kFunctionCount);
	take(&p.histogram[0][0], kOpKinds * kHistogramBins);
	p.peerMessages.assign(d, d + peers);
	d += peers;
	p.peerBytes.assign(d, d + peers);
	d += peers;
	p.iterationNs.assign(d, d + iterations);
	d += iterations;
	p.iterationMpiNs.assign(d, d + iterations);
	return p;
}

} // namespace malleo::pmpi
