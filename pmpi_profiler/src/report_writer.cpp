// SPDX-License-Identifier: Apache-2.0
#include "report_writer.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstring>
#include <map>

#include MALLEO_PMPI_FUNCTION_TABLE

namespace malleo::pmpi {

namespace {

const char *const kKindNames[kOpKinds] = {"p2p", "coll", "rma"};

// "MPI_Ialltoallv_init_c" -> "alltoallv": blocking, nonblocking, persistent and large-count forms
// of a collective are one kind.
std::string collectiveKind(const char *name)
{
	std::string kind = name + 4;
	for (const char *suffix : {"_c", "_init"})
		if (kind.size() > strlen(suffix) && kind.ends_with(suffix))
			kind.resize(kind.size() - strlen(suffix));
	if (kind[0] == 'I')
		kind.erase(0, 1);
	std::transform(kind.begin(), kind.end(), kind.begin(),
		       [](unsigned char c) { return char(std::tolower(c)); });
	return kind;
}

void jsonString(std::FILE *out, const std::string &s)
{
	std::fputc('"', out);
	for (unsigned char c : s) {
		if (c == '"' || c == '\\')
			std::fprintf(out, "\\%c", c);
		else if (c < 0x20)
			std::fprintf(out, "\\u%04x", c);
		else
			std::fputc(c, out);
	}
	std::fputc('"', out);
}

double seconds(uint64_t ns)
{
	return double(ns) * 1e-9;
}

struct Totals {
	uint64_t calls = 0, ns = 0, bytes = 0;
};

// The job between MPI_Init and MPI_Finalize (mpiP's "AppTime" and "MPITime"): what the application
// spent communicating, without starting MPI, which on a small or short run is most of the time in
// MPI.
struct AppTimes {
	uint64_t slowest = 0, slowestInit = 0, sum = 0, mpiSum = 0;

	double percent() const { return sum ? 100.0 * double(mpiSum) / double(sum) : 0.0; }
};

AppTimes appTimes(const std::vector<RankProfile> &ranks)
{
	AppTimes t;
	for (const RankProfile &p : ranks) {
		t.slowest = std::max(t.slowest, p.appNs);
		t.slowestInit = std::max(t.slowestInit, p.initNs());
		t.sum += p.appNs;
		t.mpiSum += p.appMpiNs();
	}
	return t;
}

bool isInit(int f)
{
	return f == kFn_MPI_Init || f == kFn_MPI_Init_thread;
}

void writeFunctions(std::FILE *out, const uint64_t *calls, const uint64_t *ns,
		    const uint64_t *bytes, const char *indent)
{
	std::fprintf(out, "{");
	const char *sep = "\n";
	for (int f = 0; f < kFunctionCount; ++f) {
		if (!calls[f])
			continue;
		std::fprintf(out,
			     "%s%s  \"%s\": {\"calls\": %" PRIu64
			     ", \"time_s\": %.9f, \"bytes\": %" PRIu64 "}",
			     sep, indent, kFunctions[f].name, calls[f], seconds(ns[f]), bytes[f]);
		sep = ",\n";
	}
	std::fprintf(out, "\n%s}", indent);
}

std::map<std::string, Totals> collectives(const RankProfile &p)
{
	std::map<std::string, Totals> kinds;
	for (int f = 0; f < kFunctionCount; ++f) {
		if (kFunctions[f].cls != FunctionClass::Coll || !p.fnCalls[f])
			continue;
		Totals &t = kinds[collectiveKind(kFunctions[f].name)];
		t.calls += p.fnCalls[f];
		t.ns += p.fnNs[f];
		t.bytes += p.fnBytes[f];
	}
	return kinds;
}

void writeCollectives(std::FILE *out, const std::map<std::string, Totals> &kinds,
		      const char *indent)
{
	std::fprintf(out, "{");
	const char *sep = "\n";
	for (const auto &[kind, t] : kinds) {
		std::fprintf(out,
			     "%s%s  \"%s\": {\"calls\": %" PRIu64
			     ", \"time_s\": %.9f, \"bytes\": %" PRIu64 "}",
			     sep, indent, kind.c_str(), t.calls, seconds(t.ns), t.bytes);
		sep = ",\n";
	}
	std::fprintf(out, "\n%s}", indent);
}

void writeHistogram(std::FILE *out, const uint64_t *bins)
{
	std::fprintf(out, "[");
	const char *sep = "";
	for (int b = 0; b < kHistogramBins; ++b) {
		if (!bins[b])
			continue;
		const uint64_t lo = b == 0 ? 0 : uint64_t(1) << (b - 1);
		const uint64_t hi = b == 0 ? 0 : b == 64 ? UINT64_MAX : (uint64_t(1) << b) - 1;
		std::fprintf(out,
			     "%s{\"bin\": %d, \"min_bytes\": %" PRIu64 ", \"max_bytes\": %" PRIu64
			     ", \"count\": %" PRIu64 "}",
			     sep, b, lo, hi, bins[b]);
		sep = ", ";
	}
	std::fprintf(out, "]");
}

void writeNumbers(std::FILE *out, const std::vector<uint64_t> &values, double scale)
{
	std::fprintf(out, "[");
	for (size_t i = 0; i < values.size(); ++i)
		std::fprintf(out, scale == 1.0 ? "%s%.0f" : "%s%.9f", i ? ", " : "",
			     double(values[i]) * scale);
	std::fprintf(out, "]");
}

void writeRank(std::FILE *out, const RankProfile &p, int worldSize)
{
	std::fprintf(out, "    {\n      \"rank\": %d,\n      \"host\": ", p.rank);
	jsonString(out, p.host);
	std::fprintf(out, ",\n      \"pid\": %" PRIu64 ",\n      \"threads\": %" PRIu64 ",\n",
		     p.pid, p.threads);
	std::fprintf(out,
		     "      \"wall_time_s\": %.9f,\n      \"mpi_time_s\": %.9f,\n      "
		     "\"outside_mpi_time_s\": %.9f,\n",
		     seconds(p.wallNs), seconds(p.mpiNs),
		     p.wallNs > p.mpiNs ? seconds(p.wallNs - p.mpiNs) : 0.0);
	std::fprintf(out,
		     "      \"init_time_s\": %.9f,\n      \"app_time_s\": %.9f,\n      "
		     "\"app_mpi_time_s\": %.9f,\n",
		     seconds(p.initNs()), seconds(p.appNs), seconds(p.appMpiNs()));
	std::fprintf(out, "      \"functions\": ");
	writeFunctions(out, p.fnCalls, p.fnNs, p.fnBytes, "      ");
	std::fprintf(out, ",\n      \"collectives\": ");
	writeCollectives(out, collectives(p), "      ");
	std::fprintf(out, ",\n      \"size_histograms\": {");
	for (int k = 0; k < kOpKinds; ++k) {
		std::fprintf(out, "%s\"%s\": ", k ? ", " : "", kKindNames[k]);
		writeHistogram(out, p.histogram[k]);
	}
	std::fprintf(out, "}");
	if (!p.peerMessages.empty()) {
		uint64_t messages = 0, bytes = 0;
		for (size_t i = 0; i < p.peerMessages.size(); ++i) {
			messages += p.peerMessages[i];
			bytes += p.peerBytes[i];
		}
		std::fprintf(out,
			     ",\n      \"p2p_sent\": {\"messages\": %" PRIu64
			     ", \"bytes\": %" PRIu64 ", \"outside_world\": {\"messages\": %" PRIu64
			     ", \"bytes\": %" PRIu64 "}, \"to\": [",
			     messages, bytes, p.peerMessages[size_t(worldSize)],
			     p.peerBytes[size_t(worldSize)]);
		const char *sep = "";
		for (int i = 0; i < worldSize; ++i) {
			if (!p.peerMessages[size_t(i)])
				continue;
			std::fprintf(out,
				     "%s{\"peer\": %d, \"messages\": %" PRIu64
				     ", \"bytes\": %" PRIu64 "}",
				     sep, i, p.peerMessages[size_t(i)], p.peerBytes[size_t(i)]);
			sep = ", ";
		}
		std::fprintf(out, "]}");
	}
	std::fprintf(out, ",\n      \"iterations\": ");
	if (p.iterationNs.empty()) {
		std::fprintf(out, "{\"count\": 0, \"note\": \"no iteration markers\"}");
	} else {
		std::fprintf(out, "{\"count\": %zu, \"time_s\": ", p.iterationNs.size());
		writeNumbers(out, p.iterationNs, 1e-9);
		std::fprintf(out, ", \"mpi_time_s\": ");
		writeNumbers(out, p.iterationMpiNs, 1e-9);
		std::fprintf(out, "}");
	}
	std::fprintf(out, "\n    }");
}

} // namespace

void writeJson(std::FILE *out, const ReportHeader &h, const std::vector<RankProfile> &ranks)
{
	std::fprintf(out, "{\n  \"schema\": \"malleo.pmpi.profile/1\",\n  \"app\": ");
	jsonString(out, h.app);
	std::fprintf(out, ",\n  \"job\": ");
	jsonString(out, h.job);
	std::fprintf(out, ",\n  \"mpi_library\": ");
	jsonString(out, h.mpiLibrary);
	std::fprintf(out,
		     ",\n  \"mode\": \"%s\",\n  \"ended\": \"%s\",\n  \"complete\": %s,\n  "
		     "\"world_size\": %d,\n",
		     h.mode, h.ended, h.complete ? "true" : "false", h.worldSize);

	uint64_t calls[kFunctionCount] = {}, ns[kFunctionCount] = {}, bytes[kFunctionCount] = {};
	uint64_t wall = 0, mpi = 0;
	const AppTimes app = appTimes(ranks);
	RankProfile all;
	for (const RankProfile &p : ranks) {
		wall = std::max(wall, p.wallNs);
		mpi += p.mpiNs;
		for (int f = 0; f < kFunctionCount; ++f) {
			calls[f] += p.fnCalls[f];
			ns[f] += p.fnNs[f];
			bytes[f] += p.fnBytes[f];
			all.fnCalls[f] = calls[f];
			all.fnNs[f] = ns[f];
			all.fnBytes[f] = bytes[f];
		}
	}
	std::fprintf(
	    out,
	    "  \"totals\": {\"wall_time_s\": %.9f, \"mpi_time_s\": %.9f, \"init_time_s\": %.9f, "
	    "\"app_time_s\": %.9f, \"app_mpi_time_s\": %.9f, \"app_mpi_percent\": %.3f},\n",
	    seconds(wall), seconds(mpi), seconds(app.slowestInit), seconds(app.slowest),
	    seconds(app.mpiSum), app.percent());
	std::fprintf(out, "  \"functions\": ");
	writeFunctions(out, calls, ns, bytes, "  ");
	std::fprintf(out, ",\n  \"collectives\": ");
	writeCollectives(out, collectives(all), "  ");
	std::fprintf(out, ",\n  \"ranks\": [\n");
	for (size_t r = 0; r < ranks.size(); ++r) {
		writeRank(out, ranks[r], h.worldSize);
		std::fprintf(out, r + 1 < ranks.size() ? ",\n" : "\n");
	}
	std::fprintf(out, "  ]");
	const bool matrix = h.complete && !ranks.empty() && !ranks[0].peerMessages.empty();
	if (matrix) {
		for (const char *what : {"messages", "bytes"}) {
			std::fprintf(out, ",\n  \"matrix_%s\": [", what);
			for (size_t r = 0; r < ranks.size(); ++r) {
				const auto &row =
				    what[0] == 'm' ? ranks[r].peerMessages : ranks[r].peerBytes;
				std::fprintf(out, "%s\n    [", r ? "," : "");
				for (int i = 0; i < h.worldSize; ++i)
					std::fprintf(out, "%s%" PRIu64, i ? ", " : "",
						     row[size_t(i)]);
				std::fprintf(out, "]");
			}
			std::fprintf(out, "\n  ]");
		}
	}
	std::fprintf(out, "\n}\n");
}

namespace {

std::string humanBytes(uint64_t b)
{
	const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = double(b);
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		++u;
	}
	char buf[32];
	std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

// All ranks' sums: the slowest wall time, the time in MPI, and each function's calls, time and bytes.
struct JobTotals {
	uint64_t wall = 0, mpi = 0, wallSum = 0;
	uint64_t calls[kFunctionCount] = {}, ns[kFunctionCount] = {}, bytes[kFunctionCount] = {};
	uint64_t hist[kOpKinds][kHistogramBins] = {};
};

JobTotals totalsOf(const std::vector<RankProfile> &ranks)
{
	JobTotals t;
	for (const RankProfile &p : ranks) {
		t.wall = std::max(t.wall, p.wallNs);
		t.wallSum += p.wallNs;
		t.mpi += p.mpiNs;
		for (int f = 0; f < kFunctionCount; ++f) {
			t.calls[f] += p.fnCalls[f];
			t.ns[f] += p.fnNs[f];
			t.bytes[f] += p.fnBytes[f];
		}
		for (int k = 0; k < kOpKinds; ++k)
			for (int b = 0; b < kHistogramBins; ++b)
				t.hist[k][b] += p.histogram[k][b];
	}
	return t;
}

// The message sizes of each kind of operation that sent any, all ranks together.
void writeHistograms(std::FILE *out, const uint64_t (&hist)[kOpKinds][kHistogramBins])
{
	for (int k = 0; k < kOpKinds; ++k) {
		bool any = false;
		for (int b = 0; b < kHistogramBins; ++b)
			any = any || hist[k][b];
		if (!any)
			continue;
		std::fprintf(out, "\nMessage sizes, %s (all ranks)\n", kKindNames[k]);
		for (int b = 0; b < kHistogramBins; ++b)
			if (hist[k][b])
				std::fprintf(
				    out, "  %12s .. %-12s %12" PRIu64 "\n",
				    humanBytes(b ? uint64_t(1) << (b - 1) : 0).c_str(),
				    humanBytes(b ? (uint64_t(1) << (b - 1)) * 2 - 1 : 0).c_str(),
				    hist[k][b]);
	}
}

// The point-to-point bytes between every pair of ranks, when the report has every rank and at most 16 of them.
void writeMatrix(std::FILE *out, const ReportHeader &h, const std::vector<RankProfile> &ranks)
{
	if (!h.complete || ranks.empty() || ranks[0].peerMessages.empty())
		return;
	std::fprintf(out, "\nPoint-to-point bytes sent, row = sender, column = receiver (world ranks)\n");
	if (h.worldSize > 16) {
		std::fprintf(out, "  (%d ranks: see matrix_bytes in the JSON report)\n", h.worldSize);
		return;
	}
	std::fprintf(out, "  %6s", "");
	for (int i = 0; i < h.worldSize; ++i)
		std::fprintf(out, " %10d", i);
	std::fprintf(out, "\n");
	for (const RankProfile &p : ranks) {
		std::fprintf(out, "  %6d", p.rank);
		for (int i = 0; i < h.worldSize; ++i)
			std::fprintf(out, " %10s", humanBytes(p.peerBytes[size_t(i)]).c_str());
		std::fprintf(out, "\n");
	}
}

// Each rank's iteration times, from its iteration markers.
void writeIterations(std::FILE *out, const std::vector<RankProfile> &ranks)
{
	std::fprintf(out, "\nIteration times\n");
	for (const RankProfile &p : ranks) {
		if (p.iterationNs.empty()) {
			std::fprintf(out, "  rank %d: no iteration markers\n", p.rank);
			continue;
		}
		std::vector<uint64_t> sorted = p.iterationNs;
		std::sort(sorted.begin(), sorted.end());
		uint64_t inMpi = 0, total = 0;
		for (size_t i = 0; i < p.iterationNs.size(); ++i) {
			inMpi += p.iterationMpiNs[i];
			total += p.iterationNs[i];
		}
		std::fprintf(out,
			     "  rank %d: %zu iterations, min %.6f s, median %.6f s, max %.6f s, "
			     "%.1f %% in MPI\n",
			     p.rank, sorted.size(), seconds(sorted.front()),
			     seconds(sorted[sorted.size() / 2]), seconds(sorted.back()),
			     total ? 100.0 * double(inMpi) / double(total) : 0.0);
	}
}

} // namespace

void writeSummary(std::FILE *out, const ReportHeader &h, const std::vector<RankProfile> &ranks)
{
	const JobTotals t = totalsOf(ranks);
	std::fprintf(out, "malleo PMPI profile: %s, job %s, %zu of %d ranks (%s), ended by %s\n",
		     h.app.c_str(), h.job.c_str(), ranks.size(), h.worldSize, h.mode, h.ended);
	std::fprintf(out, "MPI library: %s\n", h.mpiLibrary.c_str());
	const AppTimes app = appTimes(ranks);
	std::fprintf(out,
		     "wall time %.3f s (slowest rank); time in MPI %.3f s summed over ranks = %.1f "
		     "%% of rank time\n",
		     seconds(t.wall), seconds(t.mpi),
		     t.wallSum ? 100.0 * double(t.mpi) / double(t.wallSum) : 0.0);
	std::fprintf(out,
		     "MPI_Init %.3f s (slowest rank); MPI_Finalize not timed (the report is "
		     "written inside it)\n",
		     seconds(app.slowestInit));
	std::fprintf(out,
		     "between MPI_Init and MPI_Finalize: %.3f s (slowest rank); time in MPI %.3f s "
		     "summed over ranks "
		     "= %.1f %% of rank time\n\n",
		     seconds(app.slowest), seconds(app.mpiSum), app.percent());

	std::fprintf(out, "Time per rank\n  %6s %-20s %12s %12s %12s %7s\n", "rank", "host",
		     "MPI_Init [s]", "app [s]", "MPI [s]", "% MPI");
	for (const RankProfile &p : ranks)
		std::fprintf(out, "  %6d %-20s %12.6f %12.6f %12.6f %6.1f%%\n", p.rank,
			     p.host.c_str(), seconds(p.initNs()), seconds(p.appNs),
			     seconds(p.appMpiNs()),
			     p.appNs ? 100.0 * double(p.appMpiNs()) / double(p.appNs) : 0.0);

	std::vector<int> order;
	for (int f = 0; f < kFunctionCount; ++f)
		if (t.calls[f] && !isInit(f))
			order.push_back(f);
	std::sort(order.begin(), order.end(), [&](int a, int b) { return t.ns[a] > t.ns[b]; });
	std::fprintf(out,
		     "\nTime in MPI by function (all ranks, between MPI_Init and MPI_Finalize)\n"
		     "  %-28s %12s %12s %7s %12s\n",
		     "function", "calls", "time [s]", "% MPI", "bytes");
	for (int f : order)
		std::fprintf(out, "  %-28s %12" PRIu64 " %12.6f %6.1f%% %12s\n", kFunctions[f].name,
			     t.calls[f], seconds(t.ns[f]),
			     app.mpiSum ? 100.0 * double(t.ns[f]) / double(app.mpiSum) : 0.0,
			     humanBytes(t.bytes[f]).c_str());
	writeHistograms(out, t.hist);
	writeMatrix(out, h, ranks);
	writeIterations(out, ranks);
}

} // namespace malleo::pmpi
