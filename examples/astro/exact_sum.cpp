// SPDX-License-Identifier: Apache-2.0
#include "exact_sum.h"

#include <algorithm>
#include <cmath>

namespace astro {

namespace {

constexpr std::int64_t kChunkMask = 0xffffffff;
// Each addition puts less than 2^32 into a chunk: normalizing this often keeps every chunk far below 2^63.
constexpr std::int64_t kAdditionsBeforeNormalize = std::int64_t{1} << 29;
// The bit of weight 2^-1074 (the smallest subnormal) is bit 0 of chunk 0.
constexpr int kExponentBias = 1074;

} // namespace

void ExactSum::add(double value)
{
	if (!std::isfinite(value)) {
		++non_finite_;
		return;
	}
	if (value == 0.0)
		return;
	int exponent = 0;
	const double fraction = std::frexp(std::fabs(value), &exponent);  // |value| = fraction * 2^exponent
	auto mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));  // exact: 53 significant bits
	int position = exponent - 53 + kExponentBias;  // |value| = mantissa * 2^(position - 1074)
	if (position < 0) {
		// A subnormal: its low bits are zero, so the shift is exact.
		mantissa >>= -position;
		position = 0;
	}
	const int chunk = position / 32;
	const int shift = position % 32;
	// mantissa << shift has up to 85 bits: split it into three 32-bit chunks without a 128-bit type.
	const std::uint64_t low = (mantissa & kChunkMask) << shift;
	const std::uint64_t middle = ((mantissa >> 32) << shift) + (low >> 32);
	const std::int64_t sign = value < 0 ? -1 : 1;
	chunks_[static_cast<std::size_t>(chunk)] += sign * static_cast<std::int64_t>(low & kChunkMask);
	chunks_[static_cast<std::size_t>(chunk + 1)] += sign * static_cast<std::int64_t>(middle & kChunkMask);
	chunks_[static_cast<std::size_t>(chunk + 2)] += sign * static_cast<std::int64_t>(middle >> 32);
	if (++pending_ >= kAdditionsBeforeNormalize)
		normalize();
}

void ExactSum::normalize()
{
	for (std::size_t c = 0; c + 1 < chunks_.size(); ++c) {
		const std::int64_t carry = chunks_[c] >> 32;  // floor division: the remainder is in [0, 2^32)
		chunks_[c] -= carry * (kChunkMask + 1);
		chunks_[c + 1] += carry;
	}
	pending_ = 0;
}

double ExactSum::value() const
{
	if (non_finite_)
		return std::nan("");
	ExactSum canonical = *this;
	canonical.normalize();
	// Normalized, the representation of a total is unique; its sign is the last chunk's. Convert the magnitude so
	// that no chunk cancels another.
	const bool negative = canonical.chunks_.back() < 0;
	if (negative) {
		for (auto &chunk : canonical.chunks_)
			chunk = -chunk;
		canonical.normalize();
	}
	int top = kChunks - 1;
	while (top > 0 && canonical.chunks_[static_cast<std::size_t>(top)] == 0)
		--top;
	// The four chunks from the top hold at least 97 significant bits: adding them from the top rounds at most
	// twice near the last place of the result.
	double total = 0.0;
	for (int c = top; c >= 0 && c > top - 4; --c)
		total += std::ldexp(static_cast<double>(canonical.chunks_[static_cast<std::size_t>(c)]),
				    32 * c - kExponentBias);
	return negative ? -total : total;
}

void ExactSum::reduce(const std::vector<ExactSum *> &sums, int root, MPI_Comm comm)
{
	constexpr std::size_t kWords = kChunks + 1;
	std::vector<std::int64_t> mine(kWords * sums.size()), total(mine.size());
	for (std::size_t s = 0; s < sums.size(); ++s) {
		ExactSum &sum = *sums[s];
		sum.normalize();
		std::copy(sum.chunks_.begin(), sum.chunks_.end(), mine.begin() + static_cast<std::ptrdiff_t>(s * kWords));
		mine[s * kWords + kChunks] = sum.non_finite_;
	}
	MPI_Reduce(mine.data(), total.data(), static_cast<int>(mine.size()), MPI_INT64_T, MPI_SUM, root, comm);
	int rank = 0;
	MPI_Comm_rank(comm, &rank);
	if (rank != root)
		return;
	for (std::size_t s = 0; s < sums.size(); ++s) {
		ExactSum &sum = *sums[s];
		std::copy_n(total.begin() + static_cast<std::ptrdiff_t>(s * kWords), kChunks, sum.chunks_.begin());
		sum.non_finite_ = total[s * kWords + kChunks];
		sum.normalize();
	}
}

} // namespace astro
