// SPDX-License-Identifier: Apache-2.0
// The agent delta reporter: one thread per process that tells the local agent what this rank does
// (docs/protocol.md, "MPI processes"). It reads the per-thread counters the way the final report
// does, so the wrappers' hot path is the same with or without it; every send is non-blocking, and
// what the agent cannot take at once is dropped and counted.
#include "agent_reporter.h"

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <zmq.h>

#include "agent_msgpack.h"
#include "clock.h"
#include "iterations.h"
#include "process_state.h"
#include "thread_counters.h"

namespace malleo::pmpi {

namespace {

std::atomic<bool> gActive{true};  // setReportedActive: written by the application's thread, read by the reporter's

// The agent refuses more than kReportIterationTimesMax (1024) iteration times per report; at 1
// report per second only a program with sub-millisecond iterations has more, and the agent's running
// estimate needs the latest ones.
constexpr size_t kMaxIterationTimes = kReportIterationTimesMax;
constexpr size_t kBodyBytes = 16384;
// Reports queued while the agent is absent or slow: a few seconds' worth, then they are dropped.
constexpr int kSendHighWaterMark = 16;
// At MPI_Finalize, how long to wait for the agent to acknowledge what was sent (so `deregister`
// is not lost with the socket): longer when it has answered before, short when it never did.
constexpr int kFinalWaitMs = 250;
constexpr int kFinalWaitSilentMs = 50;

uint64_t processCpuNs()
{
	rusage usage{};
	getrusage(RUSAGE_SELF, &usage);
	auto ns = [](const timeval &t) {
		return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_usec) * 1000u;
	};
	return ns(usage.ru_utime) + ns(usage.ru_stime);
}

class Reporter
{
public:
	explicit Reporter(ReporterSetup setup) : setup_(std::move(setup)) {}

	void run();
	void requestStop();
	void reportNow();
	void printLosses() const;

private:
	bool open();
	void close();
	void send(const MsgpackWriter &body);
	MessageOrigin origin() const { return {setup_.app.c_str(), setup_.app.size(), uint64_t(setup_.rank)}; }
	void sendRegister();
	void sendReport();
	void sendDeregister();
	void drainReplies();
	void awaitAcks();
	void sumPeerBytes(uint64_t *local, uint64_t *remote) const;

	ReporterSetup setup_;
	void *context_ = nullptr;
	void *socket_ = nullptr;
	uint8_t body_[kBodyBytes];
	double times_[kMaxIterationTimes];
	uint32_t sequence_ = 0;
	uint64_t sent_ = 0;
	uint64_t refused_ = 0; // the send queue was full: dropped at once
	uint64_t replies_ = 0;
	bool needRegister_ = true;

	// Where the previous report left off.
	uint64_t lastWallNs_ = 0;
	uint64_t lastCpuNs_ = 0;
	IterationCursor iterationsSeen_;
	uint64_t iterationsSinceBytes_ = 0;
	uint64_t lastBytesLocal_ = 0;
	uint64_t lastBytesRemote_ = 0;

	std::mutex lock_;
	std::condition_variable wake_;
	bool stop_ = false;
	bool reportNow_ = false;
};

bool Reporter::open()
{
	context_ = zmq_ctx_new();
	if (!context_)
		return false;
	zmq_ctx_set(context_, ZMQ_IO_THREADS, 1);
	socket_ = zmq_socket(context_, ZMQ_DEALER);
	if (!socket_)
		return false;
	const int zero = 0, hwm = kSendHighWaterMark;
	const int64_t maxReply = kDefaultMaxMessageBytes;
	zmq_setsockopt(socket_, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(socket_, ZMQ_SNDTIMEO, &zero, sizeof(zero));
	zmq_setsockopt(socket_, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(socket_, ZMQ_MAXMSGSIZE, &maxReply, sizeof(maxReply));
	if (zmq_connect(socket_, setup_.endpoint.c_str()) != 0) {
		std::fprintf(stderr, "malleo-pmpi: rank %d: MALLEO_AGENT=%s: %s; not reporting\n",
			     setup_.rank, setup_.endpoint.c_str(), zmq_strerror(zmq_errno()));
		return false;
	}
	return true;
}

void Reporter::close()
{
	if (socket_)
		zmq_close(socket_);
	if (context_)
		zmq_ctx_term(context_);
	socket_ = context_ = nullptr;
}

void Reporter::send(const MsgpackWriter &body)
{
	if (body.overflow)
		return;
	uint8_t header[kWireHeaderSize];
	writeWireHeader(header, ++sequence_);
	// Once the first frame is queued ZeroMQ queues the second too: a message goes whole or not at all.
	if (zmq_send(socket_, header, sizeof(header), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
	    zmq_send(socket_, body.data, body.size, ZMQ_DONTWAIT) < 0) {
		++refused_;
		return;
	}
	++sent_;
}

void Reporter::sendRegister()
{
	MsgpackWriter w{body_, sizeof(body_)};
	// The envelope's id is the message's sequence number.
	writeRegister(w, sequence_ + 1, origin(), uint64_t(getpid()), uint64_t(setup_.size));
	send(w);
	needRegister_ = false;
}

// Point-to-point bytes sent so far to ranks on this host and elsewhere. Processes outside
// MPI_COMM_WORLD (spawned ones) count as elsewhere: where they run is not known here.
void Reporter::sumPeerBytes(uint64_t *local, uint64_t *remote) const
{
	const int peers = worldSize() + 1;
	*local = *remote = 0;
	for (const ThreadCounters *ts = firstThread(); ts; ts = ts->next) {
		const PeerCounters *pc = ts->peers.load(std::memory_order_acquire);
		for (int i = 0; pc && i < peers; ++i) {
			const bool here = size_t(i) < setup_.sameHost.size() && setup_.sameHost[size_t(i)];
			(here ? *local : *remote) += pc[i].bytes.get();
		}
	}
}

void Reporter::sendReport()
{
	const uint64_t nowNs = monotonicNs(), cpuNs = processCpuNs();
	const double cpuShare = nowNs > lastWallNs_ ? double(cpuNs - lastCpuNs_) /
							  double(nowNs - lastWallNs_)
						    : 0.0;
	lastWallNs_ = nowNs;
	lastCpuNs_ = cpuNs;

	const std::vector<IterationSpan> ended = iterationsSince(iterationsSeen_);
	iterationsSinceBytes_ += ended.size();

	// Bytes are per iteration: with no iteration ended since the last report that had bytes, they
	// wait for the next one; a program without marks never reports them (no guessing).
	AppReport report;
	report.cpuShare = cpuShare;
	report.active = gActive.load(std::memory_order_relaxed);
	if (perPeer() && iterationsSinceBytes_ > 0) {
		uint64_t local = 0, remote = 0;
		sumPeerBytes(&local, &remote);
		const double n = double(iterationsSinceBytes_);
		report.withBytes = true;
		report.bytesLocal = double(local - lastBytesLocal_) / n;
		report.bytesRemote = double(remote - lastBytesRemote_) / n;
		lastBytesLocal_ = local;
		lastBytesRemote_ = remote;
		iterationsSinceBytes_ = 0;
	}
	if (setup_.rank == 0 && !ended.empty()) {
		const double nsPer = nsPerTick();
		const size_t first = ended.size() > kMaxIterationTimes ? ended.size() - kMaxIterationTimes : 0;
		for (size_t i = first; i < ended.size(); ++i)
			times_[i - first] = double(ended[i].end.ticks - ended[i].start.ticks) * nsPer * 1e-9;
		report.iterationTimes = times_;
		report.iterationTimeCount = ended.size() - first;
	}

	MsgpackWriter w{body_, sizeof(body_)};
	writeAppReport(w, sequence_ + 1, origin(), report);
	send(w);
}

void Reporter::sendDeregister()
{
	MsgpackWriter w{body_, sizeof(body_)};
	writeDeregister(w, sequence_ + 1, origin());
	send(w);
}

// Every request gets one reply (`ack` or `error`); replies are not decoded beyond spotting the
// refusals that mean the agent no longer knows this process (it restarted): register again.
void Reporter::drainReplies()
{
	uint8_t frame[512];
	for (;;) {
		const int n = zmq_recv(socket_, frame, sizeof(frame), ZMQ_DONTWAIT);
		if (n < 0)
			return;
		int more = 0;
		size_t moreSize = sizeof(more);
		zmq_getsockopt(socket_, ZMQ_RCVMORE, &more, &moreSize);
		if (more)
			continue; // the header; the body follows
		++replies_;
		const size_t size = std::min(size_t(n), sizeof(frame));
		// The codes as msgpack strings (a length byte, then the text), compared as bytes: a plain `char` is signed
		// here, and its 0xab would never equal the frame's.
		for (const char *code : {"\xabunknown_app", "\xacunknown_rank"}) {
			const auto *bytes = reinterpret_cast<const uint8_t *>(code);
			if (std::search(frame, frame + size, bytes, bytes + std::strlen(code)) != frame + size)
				needRegister_ = true;
		}
	}
}

void Reporter::awaitAcks()
{
	const int budget = replies_ ? kFinalWaitMs : kFinalWaitSilentMs;
	const uint64_t deadline = monotonicNs() + uint64_t(budget) * 1000000u;
	for (;;) {
		drainReplies();
		const uint64_t now = monotonicNs();
		if (replies_ >= sent_ || now >= deadline)
			return;
		zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
		zmq_poll(&item, 1, long((deadline - now) / 1000000u) + 1);
	}
}

void Reporter::run()
{
	lastWallNs_ = monotonicNs();
	lastCpuNs_ = processCpuNs();
	if (!open()) {
		close();
		return;
	}
	const auto interval = std::chrono::duration<double>(setup_.interval);
	sendRegister();
	std::unique_lock<std::mutex> guard(lock_);
	while (!stop_) {
		wake_.wait_for(guard, interval, [this] { return stop_ || reportNow_; });
		reportNow_ = false;
		guard.unlock();
		drainReplies();
		if (needRegister_)
			sendRegister();
		sendReport();
		guard.lock();
	}
	guard.unlock();
	sendDeregister();
	awaitAcks();
	close();
}

void Reporter::requestStop()
{
	{
		std::lock_guard<std::mutex> guard(lock_);
		stop_ = true;
	}
	wake_.notify_one();
}

void Reporter::reportNow()
{
	{
		std::lock_guard<std::mutex> guard(lock_);
		reportNow_ = true;
	}
	wake_.notify_one();
}

void Reporter::printLosses() const
{
	const uint64_t unanswered = sent_ > replies_ ? sent_ - replies_ : 0;
	if (refused_ || unanswered)
		std::fprintf(stderr,
			     "malleo-pmpi: rank %d: agent at %s: %llu of %llu messages dropped, %llu "
			     "unanswered (agent absent or slow)\n",
			     setup_.rank, setup_.endpoint.c_str(), (unsigned long long)refused_,
			     (unsigned long long)(sent_ + refused_), (unsigned long long)unanswered);
}

Reporter *gReporter = nullptr;
pthread_t gThread;
pid_t gOwner = 0;
std::mutex gStartStop;

void *reporterMain(void *reporter)
{
	static_cast<Reporter *>(reporter)->run();
	return nullptr;
}

// A program that returns from main without MPI_Finalize still deregisters.
void stopAtExit()
{
	stopReporter();
}

} // namespace

void startReporter(ReporterSetup setup)
{
	std::lock_guard<std::mutex> guard(gStartStop);
	if (gReporter)
		return;
	auto *reporter = new Reporter(std::move(setup));
	// The thread (and ZeroMQ's I/O thread, which inherits the mask) takes no signal: the
	// application's handlers run on its own threads as they did without the library.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	const int rc = pthread_create(&gThread, nullptr, reporterMain, reporter);
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	if (rc != 0) {
		delete reporter;
		return;
	}
	gReporter = reporter;
	gOwner = getpid();
	std::atexit(stopAtExit);
}

void setReportedActive(bool active)
{
	if (gActive.exchange(active, std::memory_order_relaxed) == active)
		return;
	// The agent shows what the last report said, and a process registers as active: a spare that parks at
	// start would be shown computing until the next report, an interval later (MALLEO_REPORT_INTERVAL, up to an
	// hour). So a change is reported now. The reporter being started or stopped already has it, or does not
	// matter any more: the application does not wait for that lock.
	std::unique_lock<std::mutex> guard(gStartStop, std::try_to_lock);
	if (guard.owns_lock() && gReporter && gOwner == getpid())
		gReporter->reportNow();
}

void stopReporter()
{
	std::lock_guard<std::mutex> guard(gStartStop);
	// A forked child inherits the pointer but neither the thread nor a usable ZeroMQ context.
	if (!gReporter || gOwner != getpid())
		return;
	gReporter->requestStop();
	pthread_join(gThread, nullptr);
	gReporter->printLosses();
	delete gReporter;
	gReporter = nullptr;
}

} // namespace malleo::pmpi
