// The element types hora-perf benchmarks: their nccl-tests names, sizes, and
// how to read and write one element as a double on the host.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "nccl.h"

namespace hora::perf {

enum class ValueClass { SignedInteger, UnsignedInteger, Floating };

struct DataTypeInfo {
  ncclDataType_t type;
  const char* name;  // as nccl-tests spells it: "float", "bfloat16", "f8e4m3", ...
  std::size_t size;
  ValueClass valueClass;
  // Every integer in [0, exactLimit] is representable exactly, and so is
  // every intermediate result hora-perf's generated data can produce when
  // it stays within this bound (see value_model.h). Kept well below the
  // integer maximums so that an all-ones byte pattern is never a valid
  // result: it marks "not written" (see poisonBuffer).
  double exactLimit;
  // Floating types: explicit mantissa bits, for rounding-error bounds.
  int mantissaBits;
  // Floating types: the smallest positive subnormal (absolute rounding floor).
  double smallestSubnormal;
};

// All twelve types of nccl.h, in ncclDataType_t order (what "-d all" runs).
std::span<const DataTypeInfo> allDataTypes();
const DataTypeInfo& dataTypeInfo(ncclDataType_t type);

// nccl-tests' names, plus a few common aliases ("fp16", "float32", "bf16").
std::optional<ncclDataType_t> parseDataTypeName(std::string_view name);

// Element `index` of an array of `type`, as a double (exact for every type
// but 64-bit integers beyond 2^53, which hora-perf never generates).
double loadElement(ncclDataType_t type, const void* base, std::size_t index);

// Stores `value` rounded to `type` (to nearest for floating types; integers
// must be whole and in range).
void storeElement(ncclDataType_t type, void* base, std::size_t index, double value);

// Fills bytes with all ones: NaN in every floating type, and for the integer
// types a value generated data never takes. An element still holding it
// after a collective was never written.
void poisonBuffer(void* base, std::size_t bytes);

}  // namespace hora::perf
