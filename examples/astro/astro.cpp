// SPDX-License-Identifier: Apache-2.0
// astro: the papers' astronomy case (seed 000) for the C++ API — a farmer/worker maximum-likelihood fit over star
// data that is spatially independent: the stars sit in an `independent` buffer, so a split or merge moves only
// surpluses, in any order. Rank 0 is the farmer: it owns the decision (accept the trial parameters or halve the
// step) and broadcasts the next trial; every active process, the farmer included, works on the stars it holds.
//
//   astro [--stars N] [--iterations N] [--models M] [--seed S] [--progress K] [--help]      (README.md)
//
// The result is the same bits whatever the reconfigurations: a star is a function of (seed, index) and carries its
// index, every per-star term is computed from the same operands wherever the star is, the sums are exact
// (exact_sum.h says why that and not an ordered reduction) and the farmer's arithmetic runs on one process.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "malleo/pcm.hpp"

#include "astro_options.h"
#include "exact_sum.h"
#include "star_catalogue.h"
#include "student_t_fit.h"

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

// The stars on all processes, as an order-free digest (the sum of the stars' hashes modulo 2^64, so no order of
// the stars enters it) and their number: a lost, doubled or altered star changes it.
void digestStars(const astro::Star *stars, std::int64_t count, MPI_Comm comm, std::uint64_t &digest,
		 std::int64_t &total)
{
	std::uint64_t mine = 0;
	for (std::int64_t i = 0; i < count; ++i)
		mine += fnv1a(&stars[i], sizeof(astro::Star));
	MPI_Reduce(&mine, &digest, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
	MPI_Reduce(&count, &total, 1, MPI_INT64_T, MPI_SUM, 0, comm);
}

void printFit(const char *label, const astro::FitState &fit)
{
	std::printf("%s: mean %.17g km/s, scale %.17g km/s, log-likelihood %.17g (%a %a %a)\n", label, fit.mean,
		    std::exp(fit.log_scale), fit.log_likelihood, fit.mean, fit.log_scale, fit.log_likelihood);
}

} // namespace

int main(int argc, char **argv)
{
	auto &session = malleo::malleable::Session::start(&argc, &argv);
	astro::Options options;
	const std::string error = astro::parseOptions(argc, argv, options);
	if (!error.empty() || options.help) {
		// Every process parses the same arguments: all stop here together, and one speaks.
		if (session.rank() == 0)
			std::fputs(error.empty() ? astro::kUsage : (error + "\n").c_str(), error.empty() ? stdout : stderr);
		session.finish();
		return error.empty() ? 0 : 2;
	}

	auto &stars = session.distribute("stars", Distribution::independent, MPI_DOUBLE, 2, options.stars);
	auto &fit = session.replicate<astro::FitState>("fit", astro::initialFit());
	auto &step = session.replicate<std::int64_t>("step", 0);
	if (!session.joined()) {
		// At the start the blocks are balanced and in index order: offset() is this block's first star.
		auto *mine = stars.data<astro::Star>();
		for (std::int64_t i = 0; i < stars.count(); ++i)
			mine[i] = astro::makeStar(options.seed, stars.offset() + i);
	}

	for (; step < options.iterations; ++step) {
		session.remainingIterations(options.iterations - step);
		const auto event = session.probe();
		if (event.left)
			break;
		if (event.failed && session.rank() == 0)
			std::fprintf(stderr, "astro: %s\n", event.error.c_str());
		if (event.changed() && session.rank() == 0)
			std::printf("iteration %lld: %d processes\n", static_cast<long long>(step), session.size());

		std::vector<astro::Partial> partials(static_cast<std::size_t>(options.models));
		astro::evaluate(stars.data<astro::Star>(), stars.count(), fit, partials);
		std::vector<astro::ExactSum *> sums;
		for (astro::Partial &partial : partials)
			sums.insert(sums.end(), {&partial.log_density, &partial.score_mean, &partial.score_scale});
		astro::ExactSum::reduce(sums, 0, session.comm());
		if (session.rank() == 0)
			astro::advance(fit, partials, stars.global());
		MPI_Bcast(&fit, static_cast<int>(sizeof fit), MPI_BYTE, 0, session.comm());

		if (options.progress && session.rank() == 0 && step % options.progress == 0)
			std::printf("iteration %lld of %lld on %d processes: mean %.6f, scale %.6f, log-likelihood %.6f\n",
				    static_cast<long long>(step), static_cast<long long>(options.iterations),
				    session.size(), fit.mean, std::exp(fit.log_scale), fit.log_likelihood);
		// A progress line is for whoever watches the run (bench/fig10_hosts.py times them): through mpirun's pipe
		// stdout is block-buffered, and would hold it until the end.
		if (options.progress && session.rank() == 0 && step % options.progress == 0)
			std::fflush(stdout);
	}

	if (session.comm() != MPI_COMM_NULL) {
		std::uint64_t digest = 0;
		std::int64_t total = 0;
		digestStars(stars.data<astro::Star>(), stars.count(), session.comm(), digest, total);
		if (session.rank() == 0) {
			std::printf("final: %d processes, %lld iterations\n", session.size(),
				    static_cast<long long>(options.iterations));
			printFit("fit", fit);
			std::printf("stars %lld (digest %016llx); %lld steps accepted, %lld halved\n",
				    static_cast<long long>(total), static_cast<unsigned long long>(digest),
				    static_cast<long long>(fit.accepted), static_cast<long long>(fit.rejected));
			std::printf("checksum %016llx\n",
				    static_cast<unsigned long long>(fnv1a(&fit, sizeof fit, fnv1a(&total, sizeof total, digest))));
			std::fflush(stdout);
		}
	}
	session.finish();
	return 0;
}
