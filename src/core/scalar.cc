#include "core/scalar.h"

#include <cstring>

#include "base/error.h"
#include "hora_config.h"
#include "kernels/dtypes.h"
#if HORA_HAVE_CUDA
#include "device/device_memory.h"
#endif

namespace hora::core {

namespace {
template <typename T>
std::uint64_t bitsOf(T value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}
}  // namespace

std::uint64_t scalarBits(DataType type, double value) {
  switch (type) {
    case DataType::Int8: return bitsOf(static_cast<std::int8_t>(value));
    case DataType::Uint8: return bitsOf(static_cast<std::uint8_t>(value));
    case DataType::Int32: return bitsOf(static_cast<std::int32_t>(value));
    case DataType::Uint32: return bitsOf(static_cast<std::uint32_t>(value));
    case DataType::Int64: return bitsOf(static_cast<std::int64_t>(value));
    case DataType::Uint64: return bitsOf(static_cast<std::uint64_t>(value));
    case DataType::Float16: return float16(static_cast<float>(value)).bits;
    case DataType::Float32: return bitsOf(static_cast<float>(value));
    case DataType::Float64: return bitsOf(value);
    case DataType::Bfloat16: return bfloat16(static_cast<float>(value)).bits;
    case DataType::Float8e4m3: return fp8_e4m3(static_cast<float>(value)).bits;
    case DataType::Float8e5m2: return fp8_e5m2(static_cast<float>(value)).bits;
  }
  fail(ErrorKind::InvalidArgument, "invalid data type ", static_cast<int>(type));
}

void readScalar(void* to, const void* from, std::size_t bytes) {
#if HORA_HAVE_CUDA
  device::copyToHost(to, from, bytes);
#else
  std::memcpy(to, from, bytes);
#endif
}

}  // namespace hora::core
