// SPDX-License-Identifier: Apache-2.0
// An exact sum of doubles (a Kulisch-style superaccumulator), so that a fit reduced over any partition of its stars
// gives the same bits.
//
// Why not the alternatives: floating-point addition is not associative, so an MPI_SUM of per-process partial sums
// depends on how the stars are spread, and after a split or a merge of an `independent` buffer also on their order.
// Reducing per-star terms in global star-index order would fix the order, but costs a gather of every term on the
// farmer at every iteration (O(stars) messages and memory on one process: the bottleneck the papers avoid). Rounding
// each term to a fixed-point grid and summing integers is associative too, but loses small terms and overflows for
// large ones. Here every double is added exactly into 32-bit chunks spanning the whole double range held in 64-bit
// integers; integer addition is associative, so partial accumulators can be combined with MPI_SUM on MPI_INT64_T in
// any grouping and the total is the exact sum, rounded to a double once, by the farmer, in a canonical form.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <vector>

namespace astro {

class ExactSum
{
public:
	// Chunk c holds weight 2^(32 c - 1074); a double's 53-bit mantissa shifted by up to 31 bits spans 3 chunks,
	// and the largest finite double lands in chunk 65.
	static constexpr int kChunks = 68;

	void add(double value);
	// Carries every chunk into [0, 2^32) except the last, which keeps the sign; then any number of accumulators
	// may be summed chunk by chunk (MPI_SUM) without overflow.
	void normalize();
	// The exact total rounded to a double (within one unit in the last place, the same for equal totals).
	double value() const;
	bool finite() const { return non_finite_ == 0; }

	// Sums each of `sums` over every process of `comm` into the one of `root` (exact, any order), in one
	// reduction.
	static void reduce(const std::vector<ExactSum *> &sums, int root, MPI_Comm comm);

private:
	std::array<std::int64_t, kChunks> chunks_{};
	std::int64_t non_finite_ = 0;  // infinities and NaNs seen: the sum is then meaningless
	std::int64_t pending_ = 0;     // additions since the last normalize()
};

} // namespace astro
