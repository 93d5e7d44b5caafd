// Element types and reduction operations of hora's C++ API.
// The numeric values equal NCCL's ncclDataType_t / ncclRedOp_t, so the C
// boundary converts by a cast.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hora/export.h"

namespace hora {

enum class DataType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
  Float8e4m3 = 10,
  Float8e5m2 = 11,
};
inline constexpr int kNumDataTypes = 12;

// Built-in reductions. Avg is Sum then a division by the rank count
// (for floating types: each input pre-multiplied by 1/nranks, as NCCL does).
enum class RedOp : int {
  Sum = 0,
  Prod = 1,
  Max = 2,
  Min = 3,
  Avg = 4,
};
inline constexpr int kNumRedOps = 5;

HORA_API std::size_t dataTypeSize(DataType type);
HORA_API const char* dataTypeName(DataType type);  // "float", "half", "bfloat16", ...
HORA_API const char* redOpName(RedOp op);          // "sum", "prod", ...
HORA_API bool isFloatingType(DataType type);

}  // namespace hora
