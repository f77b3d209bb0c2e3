// SPDX-License-Identifier: Apache-2.0
// σ_i of the merge policy (seed 001, eq. 13): how much a node's available
// power moved over its last k samples.
#pragma once

#include <cstddef>
#include <deque>
#include <span>

namespace malleo {

// Population standard deviation (divide by n, not n − 1): σ_i describes the
// k samples themselves, not an estimate of a wider population, and it stays
// defined for k = 1. Returns 0 for fewer than two values.
double standardDeviation(std::span<const double> values);

// The last `size` APW samples and their standard deviation.
class StabilityWindow
{
public:
	explicit StabilityWindow(size_t size = 10) : size_(size) {}

	void push(double apw);
	double sigma() const;
	size_t count() const { return values_.size(); }

private:
	size_t size_;
	std::deque<double> values_;
};

} // namespace malleo
