// SPDX-License-Identifier: Apache-2.0
// The C++ API under the same sequences as heat2d: a 1D heat rod in a block1d buffer with ghost elements, plus an
// independent buffer of counters, and a replicated step counter. Prints heat2d's "final:" and "checksum" lines
// (FNV-1a of the rod's bytes in global order, then of the counters sorted), so check_heat2d_sequences.py checks it.
// A probe that changed nothing (no command, or one that failed) must leave the rod's ghost elements as they were,
// which the rod's values cannot show (its ends are fixed): checked at every probe, exit code 3 if not.
//   heat1d_cpp [--rows R] [--columns C] [--iterations N]   (the rod has R * C points)
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "malleo/pcm.hpp"

using malleo::malleable::Distribution;

namespace {

std::uint64_t fnv1a(const void *data, std::size_t n, std::uint64_t h = 1469598103934665603ULL)
{
	const auto *bytes = static_cast<const unsigned char *>(data);
	for (std::size_t i = 0; i < n; ++i) {
		h ^= bytes[i];
		h *= 1099511628211ULL;
	}
	return h;
}

std::vector<double> gather(MPI_Comm comm, int rank, int size, const double *data, int count, std::int64_t total)
{
	std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
	MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
	for (int p = 1; p < size; ++p)
		displs[static_cast<std::size_t>(p)] = displs[static_cast<std::size_t>(p - 1)] + counts[static_cast<std::size_t>(p - 1)];
	std::vector<double> all(rank == 0 ? static_cast<std::size_t>(total) : 0);
	MPI_Gatherv(data, count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm);
	return all;
}

} // namespace

int main(int argc, char **argv)
{
	std::int64_t rows = 24, columns = 30, iterations = 30;
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::int64_t value = std::atoll(argv[i + 1]);
		if (!std::strcmp(argv[i], "--rows"))
			rows = value;
		else if (!std::strcmp(argv[i], "--columns"))
			columns = value;
		else if (!std::strcmp(argv[i], "--iterations"))
			iterations = value;
	}
	auto &session = malleo::malleable::Session::start(&argc, &argv);
	const std::int64_t points = rows * columns;
	auto &rod = session.distribute("rod", Distribution::block1d, MPI_DOUBLE, 1, points, 1);
	auto &tally = session.distribute("tally", Distribution::independent, MPI_DOUBLE, 1, columns);
	auto &step = session.replicate<std::int64_t>("step", 0);
	if (!session.joined()) {
		for (std::int64_t i = 0; i < rod.count(); ++i)
			rod.data<double>()[i] = static_cast<double>((rod.offset() + i) * 37 % 101);
		for (std::int64_t i = 0; i < tally.count(); ++i)
			tally.data<double>()[i] = static_cast<double>(tally.offset() + i);
	}
	std::vector<double> next;
	for (; step < iterations; ++step) {
		const bool ghosts = rod.count() > 0;
		const double ghost_left = ghosts ? rod.data<double>()[-1] : 0.0;
		const double ghost_right = ghosts ? rod.data<double>()[rod.count()] : 0.0;
		const auto event = session.probe();
		if (event.left)
			break;
		if (ghosts && !event.changed() &&
		    (std::memcmp(&ghost_left, rod.data<double>() - 1, sizeof(double)) != 0 ||
		     std::memcmp(&ghost_right, rod.data<double>() + rod.count(), sizeof(double)) != 0)) {
			std::fprintf(stderr, "heat1d_cpp: a probe that changed nothing changed the rod's ghost elements\n");
			return 3;
		}
		if (event.failed && session.rank() == 0)
			std::fprintf(stderr, "heat1d_cpp: %s\n", event.error.c_str());
		if (event.changed() && session.rank() == 0)
			std::printf("iteration %lld: %d processes\n", static_cast<long long>(step), session.size());
		const int rank = session.rank(), size = session.size();
		double *u = rod.data<double>();
		const int n = static_cast<int>(rod.count());
		const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
		MPI_Sendrecv(u, 1, MPI_DOUBLE, left, 1, u + n, 1, MPI_DOUBLE, right, 1, session.comm(), MPI_STATUS_IGNORE);
		MPI_Sendrecv(u + n - 1, 1, MPI_DOUBLE, right, 2, u - 1, 1, MPI_DOUBLE, left, 2, session.comm(),
			     MPI_STATUS_IGNORE);
		next.assign(u, u + n);
		for (int i = 0; i < n; ++i) {
			const std::int64_t g = rod.offset() + i;
			if (g > 0 && g < points - 1)
				next[static_cast<std::size_t>(i)] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);
		}
		std::memcpy(u, next.data(), sizeof(double) * static_cast<std::size_t>(n));
		for (std::int64_t i = 0; i < tally.count(); ++i)
			tally.data<double>()[i] += 0.5;
	}
	if (session.comm() != MPI_COMM_NULL) {
		const int rank = session.rank(), size = session.size();
		const auto all = gather(session.comm(), rank, size, rod.data<double>(), static_cast<int>(rod.count()), points);
		auto counters = gather(session.comm(), rank, size, tally.data<double>(), static_cast<int>(tally.count()),
					     columns);
		if (rank == 0) {
			// An independent buffer keeps its elements, not their order: hash them in sorted order.
			std::sort(counters.begin(), counters.end());
			std::printf("final: %d processes, %lld iterations\n", size, static_cast<long long>(iterations));
			std::printf("checksum %016llx\n",
				    static_cast<unsigned long long>(fnv1a(counters.data(), counters.size() * sizeof(double),
									   fnv1a(all.data(), all.size() * sizeof(double)))));
			std::fflush(stdout);
		}
	}
	session.finish();
	return 0;
}
