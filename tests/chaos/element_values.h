// The values a chaos trial's ranks put in and expect out: small integers
// in every element type, so that sums, maxima and minima are exact in any
// order and each rank can check its results bit for bit on its own.
#pragma once

#include <cstddef>
#include <vector>

#include "nccl.h"
#include "trial_plan.h"

namespace hora::chaos {

std::size_t elementBytes(ncclDataType_t type);
double loadElement(const void* buffer, ncclDataType_t type, std::size_t index);
void storeElement(void* buffer, ncclDataType_t type, std::size_t index, double value);

// Rank `rank`'s input element `index` in call number `callIndex`.
double inputValue(int rank, std::size_t index, std::size_t callIndex);

// Rank `rank`'s expected output of `call` (call number `callIndex`) among
// `nranks` ranks, one double per output element; empty when the output is
// not defined there (a reduce's non-root ranks).
std::vector<double> expectedOutput(const Call& call, std::size_t callIndex, int rank, int nranks);

}  // namespace hora::chaos
