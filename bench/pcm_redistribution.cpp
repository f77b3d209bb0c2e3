// SPDX-License-Identifier: Apache-2.0
// Redistribution throughput of the pcm_bridge executor next to memcpy bandwidth, in one run on one machine.
//
// For each scenario (old ranks -> new ranks, the data evenly spread in 1D blocks over ranks 0..k-1, as heat2d's
// columns) and each array size, the schedule runs `repeats` times on a communicator of the ranks the scenario uses
// (the others park); a run's time is the slowest rank's, from a common barrier. memcpy bandwidth is measured by rank
// 0 copying the whole array once between two buffers while every other rank waits without spinning (MPI_Ibarrier +
// MPI_Test + 1 ms sleep), between the runs. All buffers are touched before timing, so neither side pays first-touch
// page faults. Medians over the repeats.
//
//	mpirun -n 4 build/bench/pcm_redistribution_openmpi [--sizes-mb 10,100,300] [--scenarios 1:2,2:4,4:2]
//	    [--repeats 5] [--column-doubles 1024] [--distribution block1d|block_cyclic1d] [--block 8]
//
// Options:
//   --sizes-mb        array sizes in MiB
//   --scenarios       old:new rank counts; the world must hold the larger of the two
//   --repeats         timed runs per scenario and size (the 300 MiB case runs max(3, repeats / 2))
//   --column-doubles  doubles per element (a heat2d column); the element is one contiguous MPI type
//   --distribution    block1d (the default) or block_cyclic1d (many segments per transfer)
//   --block           elements per block for block_cyclic1d
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "executor.h"

using namespace malleo::pcm;

namespace {

double median(std::vector<double> values)
{
	std::sort(values.begin(), values.end());
	std::size_t n = values.size();
	return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Waits for the other ranks without taking CPU from the one that measures.
void parkedBarrier(MPI_Comm comm)
{
	MPI_Request request;
	MPI_Ibarrier(comm, &request);
	int done = 0;
	while (!done) {
		MPI_Test(&request, &done, MPI_STATUS_IGNORE);
		if (!done)
			usleep(1000);
	}
}

Layout evenLayout(Distribution distribution, int parts, std::int64_t elements, std::int64_t block)
{
	Layout layout;
	layout.distribution = distribution;
	layout.global_count = elements;
	layout.block = block;
	for (int p = 0; p < parts; ++p) {
		layout.ranks.push_back(p);
		layout.counts.push_back(elements / parts + (p < elements % parts ? 1 : 0));
	}
	return layout;
}

struct Figures {
	double seconds;
	double moved_bytes;  // between different ranks, all ranks together
	double memcpy_seconds;
};

Figures measure(int old_ranks, int new_ranks, std::int64_t elements, MPI_Datatype element, int element_bytes,
		Distribution distribution, std::int64_t block, int repeats, int rank)
{
	Layout from = evenLayout(distribution, old_ranks, elements, block);
	Layout to = evenLayout(distribution, new_ranks, elements, block);
	Schedule plan = schedule(from, to);
	auto bytes = [&](const Layout& layout) {
		return rank < static_cast<int>(layout.ranks.size())
			   ? static_cast<std::size_t>(localCount(layout, rank)) *
				 static_cast<std::size_t>(element_bytes)
			   : 0;
	};
	std::vector<char> old_buffer(bytes(from)), new_buffer(bytes(to));
	std::memset(old_buffer.data(), 1, old_buffer.size());
	std::memset(new_buffer.data(), 0, new_buffer.size());
	std::size_t array_bytes = static_cast<std::size_t>(elements) * static_cast<std::size_t>(element_bytes);
	std::vector<char> copy_from, copy_to;
	if (rank == 0) {
		copy_from.assign(array_bytes, 1);
		copy_to.assign(array_bytes, 0);
	}

	// Only the ranks of the scenario take part (a 1 -> 2 run is a two-process job); the others park.
	MPI_Comm comm = MPI_COMM_NULL;
	MPI_Comm_split(MPI_COMM_WORLD, rank < std::max(old_ranks, new_ranks) ? 0 : MPI_UNDEFINED, rank, &comm);
	std::vector<double> times, copies;
	double moved = 0;
	for (int r = 0; r < repeats + 1; ++r) {	 // the first run warms up and is not counted
		if (comm != MPI_COMM_NULL) {
			MPI_Barrier(comm);
			double start = MPI_Wtime();
			ExecuteResult result = execute(comm, plan, old_buffer.empty() ? nullptr : old_buffer.data(),
						       new_buffer.empty() ? nullptr : new_buffer.data(), element);
			double elapsed = MPI_Wtime() - start, slowest = 0;
			MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
			double sent = static_cast<double>(result.bytes_sent), all_sent = 0;
			MPI_Allreduce(&sent, &all_sent, 1, MPI_DOUBLE, MPI_SUM, comm);
			int error = result.mpi_error, any_error = 0;
			MPI_Allreduce(&error, &any_error, 1, MPI_INT, MPI_MAX, comm);
			if (any_error != MPI_SUCCESS) {
				if (rank == 0)
					std::fprintf(stderr, "pcm_redistribution: execute failed with MPI error %d\n",
						     any_error);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			if (r > 0)
				times.push_back(slowest);
			moved = all_sent;
		}
		parkedBarrier(MPI_COMM_WORLD);
		if (rank == 0) {
			double copy_start = MPI_Wtime();
			std::memcpy(copy_to.data(), copy_from.data(), array_bytes);
			double copy_seconds = MPI_Wtime() - copy_start;
			if (r > 0)
				copies.push_back(copy_seconds);
		}
		parkedBarrier(MPI_COMM_WORLD);
	}
	if (comm != MPI_COMM_NULL)
		MPI_Comm_free(&comm);
	return {times.empty() ? 0 : median(times), moved, copies.empty() ? 0 : median(copies)};
}

std::vector<std::string> split(const std::string& text, char separator)
{
	std::vector<std::string> parts;
	std::size_t start = 0;
	for (std::size_t end; (end = text.find(separator, start)) != std::string::npos; start = end + 1)
		parts.push_back(text.substr(start, end - start));
	parts.push_back(text.substr(start));
	return parts;
}

}  // namespace

int main(int argc, char** argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, world = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world);

	CLI::App app{"Redistribution throughput of the pcm_bridge executor next to memcpy bandwidth"};
	std::string sizes_text = "10,100,300", scenarios_text = "1:2,2:4,4:2", distribution_text = "block1d";
	int repeats = 5, column_doubles = 1024;
	std::int64_t block = 8;
	app.add_option("--sizes-mb", sizes_text, "array sizes in MiB, comma-separated");
	app.add_option("--scenarios", scenarios_text, "old:new rank counts, comma-separated");
	app.add_option("--repeats", repeats, "timed runs per scenario and size")->check(CLI::Range(1, 1000));
	app.add_option("--column-doubles", column_doubles, "doubles per element")->check(CLI::Range(1, 1 << 20));
	app.add_option("--distribution", distribution_text, "block1d or block_cyclic1d")
	    ->check(CLI::IsMember({"block1d", "block_cyclic1d"}));
	app.add_option("--block", block, "elements per block (block_cyclic1d)")->check(CLI::Range(1, 1 << 30));
	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError& e) {
		int code = rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
		MPI_Finalize();
		return code;
	}
	Distribution distribution =
	    distribution_text == "block1d" ? Distribution::block1d : Distribution::block_cyclic1d;

	std::vector<std::pair<int, int>> scenarios;
	std::vector<double> sizes;
	try {
		for (const std::string& s : split(scenarios_text, ',')) {
			auto pair = split(s, ':');
			if (pair.size() != 2)
				throw std::invalid_argument(s);
			scenarios.push_back({std::stoi(pair[0]), std::stoi(pair[1])});
			if (scenarios.back().first < 1 || scenarios.back().second < 1 ||
			    std::max(scenarios.back().first, scenarios.back().second) > world)
				throw std::invalid_argument(s + " (the world has " + std::to_string(world) + " ranks)");
		}
		for (const std::string& s : split(sizes_text, ','))
			sizes.push_back(std::stod(s));
	} catch (const std::exception& e) {
		if (rank == 0)
			std::fprintf(stderr, "pcm_redistribution: bad --scenarios or --sizes-mb entry: %s\n", e.what());
		MPI_Finalize();
		return 2;
	}

	MPI_Datatype column;
	MPI_Type_contiguous(column_doubles, MPI_DOUBLE, &column);
	MPI_Type_commit(&column);
	int element_bytes = column_doubles * 8;
	if (rank == 0)
		std::printf(
		    "%d ranks, %s, elements of %d bytes, median of %d runs\n\n"
		    "| scenario | array MiB | median s | array GB/s | moved GB/s | memcpy GB/s | array / memcpy |\n"
		    "| --- | --- | --- | --- | --- | --- | --- |\n",
		    world, distribution_text.c_str(), element_bytes, repeats);
	for (double mb : sizes) {
		auto elements = static_cast<std::int64_t>(mb * 1048576.0 / element_bytes);
		int runs = mb >= 300 ? std::max(3, repeats / 2) : repeats;
		for (auto [from, to] : scenarios) {
			Figures f = measure(from, to, elements, column, element_bytes, distribution, block, runs, rank);
			if (rank != 0)
				continue;
			double array = static_cast<double>(elements) * element_bytes;
			double memcpy_rate = array / f.memcpy_seconds / 1e9;
			std::printf("| %d → %d | %.0f | %.4f | %.2f | %.2f | %.2f | %.0f %% |\n", from, to, mb,
				    f.seconds, array / f.seconds / 1e9, f.moved_bytes / f.seconds / 1e9, memcpy_rate,
				    100.0 * (array / f.seconds / 1e9) / memcpy_rate);
			std::fflush(stdout);
		}
	}
	MPI_Type_free(&column);
	MPI_Finalize();
	return 0;
}
