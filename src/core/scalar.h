// Scalars of the reductions in an element type's own representation.
#pragma once

#include <cstdint>

#include "hora/types.h"

namespace hora::core {

// `value` converted to `type` (rounded to nearest), as the low bytes of the result.
std::uint64_t scalarBits(DataType type, double value);

}  // namespace hora::core
