// SPDX-License-Identifier: Apache-2.0
#include "stability.h"

#include <cmath>
#include <vector>

namespace malleo {

double standardDeviation(std::span<const double> values)
{
	if (values.size() < 2)
		return 0.0;
	double mean = 0.0;
	for (double v : values)
		mean += v;
	mean /= static_cast<double>(values.size());
	// Two passes rather than Σx² − n·mean²: APW values are close together and
	// the one-pass form loses them to cancellation.
	double squares = 0.0;
	for (double v : values)
		squares += (v - mean) * (v - mean);
	return std::sqrt(squares / static_cast<double>(values.size()));
}

void StabilityWindow::push(double apw)
{
	values_.push_back(apw);
	while (values_.size() > size_)
		values_.pop_front();
}

double StabilityWindow::sigma() const
{
	std::vector<double> copy(values_.begin(), values_.end());
	return standardDeviation(copy);
}

} // namespace malleo
