#include "api/arguments.h"

#include <limits>

#include "base/error.h"

namespace hora::api {

DataType checkType(int value, const char* name) {
  HORA_CHECK_ARG(value >= 0 && value < kNumDataTypes, "invalid ", name, " ", value,
                 " (valid: 0..", kNumDataTypes - 1, ")");
  return static_cast<DataType>(value);
}

std::size_t checkedBytes(std::size_t count, DataType type, std::size_t blocks) {
  const auto limit = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  const std::size_t element = dataTypeSize(type);
  // Products that report their own overflow, not divisions (tens of cycles
  // each, on every call).
  std::size_t bytes = 0;
  const bool overflows = __builtin_mul_overflow(count, element, &bytes) ||
                         __builtin_mul_overflow(bytes, blocks, &bytes) || bytes > limit;
  HORA_CHECK_ARG(!overflows, "count ", count, " x ", blocks, " x ", element,
                 "-byte elements overflows the address space");
  return bytes;
}

void checkBuffer(const void* buffer, std::size_t count, const char* name) {
  HORA_CHECK_ARG(buffer != nullptr || count == 0, name, " is NULL but count is ", count);
}

void checkRoot(int root, int nranks) {
  HORA_CHECK_ARG(root >= 0 && root < nranks, "root ", root, " is outside [0, ", nranks, ")");
}

void checkPeer(int peer, int nranks) {
  HORA_CHECK_ARG(peer >= 0 && peer < nranks, "peer ", peer, " is outside [0, ", nranks, ")");
}

}  // namespace hora::api
