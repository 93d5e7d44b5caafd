// The checks every element-wise reduction makes before it runs, on the host
// (reduceHost) and on the device (reduceDevice): a valid type and kind, a
// divisor for SumPostDiv, and, when count > 0, non-null pointers aligned to
// the element size, with dst either equal to or disjoint from each input.
#pragma once

#include <cstddef>

#include "kernels/reduce_host.h"

namespace hora::kernels {

// Throws hora::Error(InvalidArgument) whose message starts with `caller`.
void checkReduceArguments(const char* caller, const ReduceSpec& spec, const void* dst,
                          const void* local, const void* remote, std::size_t count);

}  // namespace hora::kernels
